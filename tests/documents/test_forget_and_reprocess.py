"""Forget and documents agree (issue 70): forgetting one passage of a document takes its
original (which holds the passage) and the facts learned from that passage, and a later
reprocess (``PUT /documents/{id}``) rebuilds the document from the chunks it has left: it
ends ``ready``, never ``failed`` with ``original_unavailable``, and the forgotten passage
never comes back. On both record stores (``runtime`` is parametrized by ``store_kind``)."""

from __future__ import annotations

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.models.document_records import Document
from agent_memory.runtime import get_runtime
from agent_memory.services.documents import chunking

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
RC = RequestContext(context_id="acme", principal="local-admin", admin=True)

SECRET = "The Zanzibar office keeps the spare keys in the blue cabinet."
HANDBOOK = ("# Travel\n\n" + SECRET + " Bob Marsh works at Zanzibar Holdings.\n\n"
            "# Food\n\nLunch is served at noon in the canteen.\n\n"
            "# People\n\nCarol Reyes lives in Lisbon.\n")


def settle() -> None:
    get_runtime().ingestion_queue.join(timeout=60)


def upload(api, text: str = HANDBOOK) -> str:
    r = api.post(DOCS, {"title": "Handbook", "text": text})
    assert r.status == 202, r.text
    settle()
    doc_id = r.json()["id"]
    assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready"
    return doc_id


def chunk_texts(api, doc_id: str) -> list[str]:
    r = api.get(f"{DOCS}/{doc_id}/chunks?limit=100")
    assert r.status == 200, r.text
    return [c["text"] for c in r.json()["chunks"]]


def forget_secret(api, **fields) -> dict:
    r = api.post(f"{CTX}/forget", {"query": SECRET, "limit": 1, "minScore": 0.1, **fields})
    assert r.status == 200, r.text
    body = r.json()
    assert [i["kind"] for i in body["items"]] == ["chunk"], body
    return body


def facts_citing(chunk_id: str) -> list[dict]:
    """Every live fact row whose source is ``chunk_id``, read behind the service's back."""
    store = get_runtime().store
    return [r.data for r in store.scan(keys.base(RC)) if r.data.get("kind") in
            ("attribute", "relation", "action", "instruction") and not r.data.get("deleted")
            and (r.data.get("source") or {}).get("ref") == chunk_id]


def document_row(doc_id: str) -> Document:
    record = get_runtime().store.get(keys.documents_pk(RC), doc_id)
    assert record is not None
    return Document.from_item(record.data)


@pytest.mark.parametrize("purge", [False, True], ids=["soft", "purge"])
def test_reprocess_after_forgetting_a_passage_rebuilds_from_the_remaining_chunks(api, purge):
    doc_id = upload(api)
    before = api.get(f"{DOCS}/{doc_id}/chunks?limit=100").json()["chunks"]
    assert len(before) == 3
    secret_chunk = next(c for c in before if "Zanzibar" in c["text"])
    kept = {c["text"]: c["id"] for c in before if c is not secret_chunk}

    forget_secret(api, purge=purge)
    assert api.get(f"{DOCS}/{doc_id}/raw").json()["code"] == "original_unavailable"
    doc = document_row(doc_id)
    assert doc.original_key is None and doc.passages_forgotten == 1
    assert api.get(f"{DOCS}/{doc_id}").json()["passagesForgotten"] == 1

    r = api.request("PUT", f"{DOCS}/{doc_id}")
    assert r.status == 202 and r.json()["queued"] is True, r.text
    settle()
    got = api.get(f"{DOCS}/{doc_id}").json()
    assert got["status"] == "ready" and got.get("error") is None, got
    assert got["version"] == 2 and got["chunksTotal"] == 2
    after = api.get(f"{DOCS}/{doc_id}/chunks?limit=100").json()["chunks"]
    # the kept chunks carry over (same ids, their facts and links), the forgotten one never returns
    assert {c["text"]: c["id"] for c in after} == kept
    assert [c["ordinal"] for c in after] == [0, 1]
    assert all("Zanzibar" not in c["text"] for c in after)
    rebuilt = "\n\n".join(c["text"] for c in after)
    assert got["contentHash"] == chunking.content_hash(rebuilt)
    # nothing of the forgotten passage is left in the chunk rows, soft-deleted ones included
    rows = get_runtime().store.query(keys.chunks_pk(RC, doc_id), limit=100).records
    assert all("Zanzibar" not in str(r.data) for r in rows)
    hits = api.post(f"{CTX}/query", {"query": "spare keys blue cabinet Zanzibar", "limit": 10}).json()
    assert "Zanzibar office" not in str(hits)
    # a second reprocess is a plain one (nothing more to rebuild), and still ends ready
    assert api.request("PUT", f"{DOCS}/{doc_id}").status == 202
    settle()
    assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready"
    assert chunk_texts(api, doc_id) == list(kept)


def test_facts_learned_from_a_forgotten_chunk_go_with_it(api):
    doc_id = upload(api)
    before = api.get(f"{DOCS}/{doc_id}/chunks?limit=100").json()["chunks"]
    secret_chunk = next(c for c in before if "Zanzibar" in c["text"])["id"]
    other_chunk = next(c for c in before if "Lisbon" in c["text"])["id"]
    learned = facts_citing(secret_chunk)
    assert learned, "the extractor learned nothing from the passage: the test would prove nothing"
    kept_facts = facts_citing(other_chunk)

    preview = forget_secret(api, dryRun=True)
    assert preview["deleted"] == 0
    assert {d["id"] for d in preview["derivedFacts"]} == {f["id"] for f in learned}
    assert all(d["sourceId"] == secret_chunk for d in preview["derivedFacts"])
    assert facts_citing(secret_chunk) == learned  # a dry run removes nothing

    body = forget_secret(api)
    assert {d["id"] for d in body["derivedFacts"]} == {f["id"] for f in learned}
    assert facts_citing(secret_chunk) == []
    # facts of the other passages stay, still citing chunks that exist
    assert [f["id"] for f in facts_citing(other_chunk)] == [f["id"] for f in kept_facts]
    state = api.get(f"{CTX}/state").text
    assert "Zanzibar" not in state and "Marsh" not in state


def test_forgetting_every_passage_then_reprocessing_ends_ready_and_empty(api):
    doc_id = upload(api, "Only one passage: the Zanzibar office keeps the spare keys in the blue cabinet.\n")
    forget_secret(api, purge=True)
    assert api.request("PUT", f"{DOCS}/{doc_id}").status == 202
    settle()
    got = api.get(f"{DOCS}/{doc_id}").json()
    assert got["status"] == "ready" and got["chunksTotal"] == 0, got
    assert chunk_texts(api, doc_id) == []


def test_a_document_without_an_original_for_another_reason_still_answers_409(api):
    doc_id = upload(api)
    get_runtime().documents.remove_original(doc_id)  # lost, not forgotten: nothing to rebuild from
    store = get_runtime().store
    record = store.get(keys.documents_pk(RC), doc_id)
    from dataclasses import replace

    from agent_memory.ports import Record
    store.put(Record(record.pk, record.sk, replace(Document.from_item(record.data), original_key=None).to_item(),
                     version=record.version + 1))
    r = api.request("PUT", f"{DOCS}/{doc_id}")
    assert r.status == 409 and r.json()["code"] == "original_unavailable", r.text


def test_rebuilt_chunks_keep_their_place_and_never_merge_across_a_gap():
    joined, chunks = chunking.rebuilt([("First kept.", ("A",), None), ("", ("B",), None),
                                       ("Second kept.", ("C",), 3)])
    assert joined == "First kept.\n\nSecond kept."
    assert [(c.text, c.heading_path, c.page, c.offset) for c in chunks] == [
        ("First kept.", ("A",), None, 0), ("Second kept.", ("C",), 3, 13)]
    assert all(joined[c.offset:c.offset + len(c.text)] == c.text for c in chunks)
