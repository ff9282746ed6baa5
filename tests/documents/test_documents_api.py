"""/documents: JSON and multipart uploads (in-process and over the local server, both
stores), dedupe (sequential and racing), caps and malformed input, chunk paging, delete
removing chunk units from search, authoritative document facts, and failures that write
nothing."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import httpx
import pytest
from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.models.documents import DocumentUpload
from agent_memory.ports import ModelError as PortModelError
from agent_memory.ports import ModelTimeout, Record, SearchFilter
from agent_memory.presenters.documents import ingested
from agent_memory.runtime import get_runtime

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
RC = RequestContext(context_id="acme", principal="local-admin", admin=True)

HANDBOOK = """# Handbook

Welcome to the Acme handbook.

## Travel

Book trips through the travel portal.

### Expenses

Submit expense receipts within 30 days. Alice works at Acme.
"""


def settle() -> None:
    """Wait for the in-process ingestion worker to finish the jobs queued so far."""
    get_runtime().ingestion_queue.join(timeout=60)


def upload(api, text: str = HANDBOOK, **extra) -> dict:
    r = api.post(DOCS, {"title": "Team handbook", "text": text, **extra})
    assert r.status in (200, 202), r.text
    settle()
    return r.json()


def rows(pk: str) -> list[Record]:
    return get_runtime().store.query(pk, limit=1000).records


def doc_rows() -> list[Record]:
    return rows(keys.documents_pk(RC))


def hash_rows() -> list[Record]:
    return rows(keys.document_hashes_pk(RC))


def chunk_hits(query: str = "expense receipts travel handbook", k: int = 50) -> list:
    return fused_search(get_runtime().search, query, SearchFilter(context_id="acme", kinds=["chunk"]), k=k)


def written_nothing() -> bool:
    return not doc_rows() and not hash_rows() and not chunk_hits() and not rows(keys.entities_pk(RC))


def test_json_upload_stores_document_and_structured_chunks(any_api):
    r = any_api.post(DOCS, {"title": "Team handbook", "text": HANDBOOK, "scopes": ["team/a"], "labels": ["hr"],
                            "observedAt": "2026-01-05T09:00:00Z"})
    assert r.status == 202, r.text
    body = r.json()
    assert body["id"].startswith("doc_") and body["status"] == "ingesting" and body["deduplicated"] is False
    assert len(body["contentHash"]) == 64 and body["chunkCount"] == body["chunksTotal"] == 3
    settle()
    doc = any_api.get(f"{DOCS}/{body['id']}").json()
    assert doc["title"] == "Team handbook" and doc["format"] == "markdown" and doc["status"] == "ready"
    assert doc["chunksDone"] == doc["chunksTotal"] == 3 and "error" not in doc
    assert doc["scopes"] == [["team/a"]] and doc["labels"] == ["hr"]
    assert doc["observedAt"] == "2026-01-05T09:00:00.000Z" and doc["size"] == len(HANDBOOK.strip().encode())
    page = any_api.get(f"{DOCS}/{body['id']}/chunks").json()
    assert (page["page"], page["total"], page["hasMore"], page["nextCursor"]) == (1, 3, False, None)
    items = page["chunks"]
    assert [c["headingPath"] for c in items] == [["Handbook"], ["Handbook", "Travel"],
                                                 ["Handbook", "Travel", "Expenses"]]
    assert all(c["id"].startswith("chunk_") and c["documentId"] == body["id"] for c in items)
    assert all(c["documentTitle"] == "Team handbook" for c in items)
    norm = HANDBOOK.strip()
    for c in items:
        assert norm[c["offset"]:c["offset"] + len(c["text"])] == c["text"]
        assert c["positionPercent"] == c["offset"] * 100 // len(norm)


def test_chunks_become_search_units_with_citation_metadata(api):
    doc = upload(api, observedAt="2026-01-05T09:00:00Z")
    hits = chunk_hits("expense receipts 30 days")
    assert hits and hits[0].unit.kind == "chunk"
    unit = hits[0].unit
    assert unit.text.startswith("Handbook > Travel > Expenses\n\nSubmit expense receipts")
    assert unit.metadata["documentId"] == doc["id"] and unit.metadata["documentTitle"] == "Team handbook"
    assert isinstance(unit.metadata["positionPercent"], int) and unit.metadata["ordinal"] == 2
    assert unit.occurred_at == "2026-01-05T09:00:00.000Z" and unit.source_ids == [doc["id"]]


def test_multipart_upload_over_the_local_server(client):
    files = {"file": ("handbook.md", HANDBOOK.encode(), "application/octet-stream")}
    r = client.post(DOCS, files=files, data={"scopes": '["team/a"]', "labels": '["hr"]'})
    assert r.status_code == 202, r.text
    doc = client.get(f"{DOCS}/{r.json()['id']}").json()
    # format from the .md name; title from the first heading; scopes/labels from JSON fields
    assert doc["format"] == "markdown" and doc["title"] == "Handbook" and doc["filename"] == "handbook.md"
    assert doc["scopes"] == [["team/a"]] and doc["labels"] == ["hr"]
    again = client.post(DOCS, json={"text": HANDBOOK, "scopes": ["team/a"]})
    assert again.status_code == 200 and again.json()["id"] == doc["id"]  # JSON and multipart: one content


def test_multipart_binary_body_survives_base64_transport(client):
    # Latin-1 bytes are not UTF-8: the local server base64-encodes the body, as API Gateway does.
    text = "R\u00e9sum\u00e9 of the caf\u00e9 rules.\n\nNo d\u00e9j\u00e0 vu."
    files = {"file": ("notes.txt", text.encode("latin-1"), "text/plain; charset=latin-1")}
    r = client.post(DOCS, files=files, data={"title": "Caf\u00e9 rules"})
    assert r.status_code == 202, r.text
    settle()
    chunks = client.get(f"{DOCS}/{r.json()['id']}/chunks").json()["chunks"]
    assert chunks[0]["text"] == text and chunks[0]["documentTitle"] == "Caf\u00e9 rules"
    bad = client.post(DOCS, files={"file": ("x.txt", b"\xff\xfe\xfa broken", "text/plain")})
    assert bad.status_code == 415 and bad.json()["field"] == "file"


def test_same_content_twice_is_deduplicated_without_model_calls(api, model):
    first = upload(api)
    calls = model.calls["structured"]
    assert calls == 1  # the three chunks fit one extraction window
    # the same content after normalisation (CRLF, trailing blanks, another title) is the same document
    second = api.post(DOCS, {"title": "Other title", "text": HANDBOOK.replace("\n", "  \r\n") + "\n\n"})
    assert second.status == 200, second.text
    assert second.json() == {**first, "deduplicated": True, "status": "ready"}
    assert model.calls["structured"] == calls and len(doc_rows()) == 1
    other_scope = api.post(DOCS, {"text": HANDBOOK, "scopes": ["team/b"]})
    assert other_scope.status == 202 and other_scope.json()["id"] != first["id"]


def test_two_concurrent_uploads_of_the_same_content_make_one_document(runtime, monkeypatch):
    from agent_memory.services.documents import chunking

    barrier = threading.Barrier(2)
    chunk = chunking.chunk

    def chunk_after_both_checked(text, fmt):  # both passed the dedupe read before either claims
        barrier.wait(timeout=10)
        return chunk(text, fmt)

    monkeypatch.setattr(chunking, "chunk", chunk_after_both_checked)
    req = DocumentUpload(text=HANDBOOK, title="Team handbook")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: runtime.documents.ingest(RC, req), range(2)))
    settle()
    assert sorted(r.created for r in results) == [False, True]
    assert results[0].document.id == results[1].document.id
    assert [ingested(r)[0]["deduplicated"] for r in results if not r.created] == [True]
    assert len(doc_rows()) == 1 and len(hash_rows()) == 1
    doc_id = results[0].document.id
    assert {h.unit.metadata["documentId"] for h in chunk_hits()} == {doc_id}
    assert len(rows(keys.chunks_pk(RC, doc_id))) == 3


def test_document_over_5_mib_is_413_and_writes_nothing(api):
    r = api.post(DOCS, {"text": "a" * (5 * 1024 * 1024 + 1)})
    assert r.status == 413, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert written_nothing()


def test_multipart_file_over_5_mib_is_413(client):
    files = {"file": ("big.txt", b"word " * (1024 * 1024 + 1), "text/plain")}
    assert client.post(DOCS, files=files).status_code == 413
    assert written_nothing()


@pytest.mark.parametrize("body,field", [
    ({"title": "no text"}, "text"),
    ({"text": ""}, "text"),
    ({"text": "  \n\n  "}, "text"),
    ({"text": "x", "format": "pdf"}, "format"),
    ({"text": "x", "observedAt": "yesterday"}, "observedAt"),
    ({"text": "x", "title": "   "}, "title"),
    ({"text": "bin\u0000ary"}, "text"),
])
def test_invalid_json_upload_is_400_naming_the_field(api, body, field):
    r = api.post(DOCS, body)
    assert r.status == 400, r.text
    assert r.json()["field"] == field
    assert written_nothing()


@pytest.mark.parametrize("content_type,raw", [
    ("multipart/form-data", b"--x\r\n\r\nabc\r\n--x--\r\n"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc"),
    ("multipart/form-data; boundary=x", b"no parts here"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nT\r\n--x--\r\n"),
])
def test_malformed_or_incomplete_multipart_is_400(any_api, content_type, raw):
    r = any_api.post(DOCS, raw=raw, headers={"content-type": content_type})
    assert r.status == 400, r.text
    assert written_nothing()


def test_chunk_pages_follow_the_cursor_across_several_write_transactions(api):
    sections = "\n\n".join(f"## Section {i}\n\nPolicy number {i} applies to everyone." for i in range(130))
    doc = upload(api, text=f"# Policies\n\n{sections}")
    assert doc["chunkCount"] == 130  # written in two chunk transactions (100 + 30)
    first = api.get(f"{DOCS}/{doc['id']}/chunks?limit=100").json()
    assert len(first["chunks"]) == 100 and first["hasMore"] is True and first["total"] == 130
    second = api.get(f"{DOCS}/{doc['id']}/chunks?limit=100&cursor={first['nextCursor']}").json()
    assert len(second["chunks"]) == 30 and (second["page"], second["hasMore"], second["nextCursor"]) == (2, False, None)
    assert [c["ordinal"] for c in first["chunks"] + second["chunks"]] == list(range(130))
    assert second["chunks"][-1]["headingPath"] == ["Policies", "Section 129"]
    # by number, as the Spectron client pages: the same rows
    numbered = api.get(f"{DOCS}/{doc['id']}/chunks?page=2&page_size=100").json()
    assert [c["id"] for c in numbered["chunks"]] == [c["id"] for c in second["chunks"]]
    assert len(api.get(f"{DOCS}/{doc['id']}/chunks?page_size=3&limit=10").json()["chunks"]) == 3
    assert api.get(f"{DOCS}/{doc['id']}/chunks?limit=501").status == 400
    assert api.get(f"{DOCS}/{doc['id']}/chunks?cursor=forged").status == 400


def test_delete_removes_document_chunks_and_their_search_units_but_keeps_facts(any_api):
    doc = upload(any_api)
    assert len(chunk_hits()) == 3
    assert any_api.delete(f"{DOCS}/{doc['id']}").status == 204
    assert chunk_hits() == []
    assert any_api.get(f"{DOCS}/{doc['id']}").status == 404
    assert any_api.get(f"{DOCS}/{doc['id']}/chunks").status == 404
    assert any_api.delete(f"{DOCS}/{doc['id']}").status == 404
    assert doc_rows() == [] and hash_rows() == [] and rows(keys.chunks_pk(RC, doc["id"])) == []
    attrs = rows(keys.attrs_pk(RC, "entity:person/alice"))
    assert any(r.data.get("value") == "Acme" for r in attrs)  # facts learned from it stay
    again = any_api.post(DOCS, {"text": HANDBOOK})
    assert again.status == 202 and again.json()["id"] != doc["id"]  # the content can come back
    settle()


def test_unknown_document_is_404(api):
    assert api.get(f"{DOCS}/doc_01nothere").status == 404
    assert api.get(f"{DOCS}/not-a-doc-id").status == 404
    assert api.delete(f"{DOCS}/doc_01nothere").status == 404


def test_document_facts_are_authoritative_over_conversation(api):
    doc = upload(api)
    alice = "entity:person/alice"
    employer = [r.data for r in rows(keys.attrs_pk(RC, alice)) if r.data.get("kind") == "attribute"]
    assert [(a["value"], a["source"]["kind"]) for a in employer] == [("Acme", "document")]
    chunk_ids = {c["id"] for c in api.get(f"{DOCS}/{doc['id']}/chunks").json()["chunks"]}
    assert employer[0]["source"]["ref"] in chunk_ids
    r = api.post(f"{CTX}/facts", {"text": "Alice works at Globex."})
    assert r.status == 200, r.text
    ext = r.json()["extraction"]
    assert ext["corrections"] == [] and ext["uncertainties"]
    current = [r.data["value"] for r in rows(keys.attrs_pk(RC, alice))
               if r.data.get("kind") == "attribute" and r.data["validUntil"] is None]
    assert current == ["Acme"]


def test_a_document_supersedes_a_conversational_fact(api):
    api.post(f"{CTX}/facts", {"text": "Alice works at Globex.", "observedAt": "2025-01-01T00:00:00Z"})
    upload(api, text="Alice works at Acme.", observedAt="2026-01-01T00:00:00Z")
    current = [r.data for r in rows(keys.attrs_pk(RC, "entity:person/alice"))
               if r.data.get("kind") == "attribute" and r.data["validUntil"] is None]
    assert [(a["value"], a["source"]["kind"]) for a in current] == [("Acme", "document")]


@pytest.mark.parametrize("failures,status,slug", [
    ([None, ModelTimeout("slow")], 504, "model-timeout"),
    ([None, None, PortModelError("boom")], 502, "model-failed"),
])
def test_model_failure_ends_failed_with_a_problem_and_a_new_upload_replaces_it(any_api, model, runtime,
                                                                               monkeypatch, failures, status, slug):
    # calls in chunk order, one per chunk, so the scripted failure hits the chunk it names
    one_at_a_time = replace(runtime.settings.limits, document_concurrency=1, document_window_chars=0)
    monkeypatch.setattr(runtime, "settings", replace(runtime.settings, limits=one_at_a_time))
    model.failures = list(failures)
    r = any_api.post(DOCS, {"text": HANDBOOK})
    assert r.status == 202, r.text
    settle()
    doc = any_api.get(f"{DOCS}/{r.json()['id']}").json()
    assert doc["status"] == "failed" and doc["chunksDone"] < doc["chunksTotal"] == 3
    assert doc["error"]["status"] == status and doc["error"]["type"].endswith(slug), doc["error"]
    again = any_api.post(DOCS, {"text": HANDBOOK})
    assert again.status == 202 and again.json()["id"] != doc["id"]  # a failed claim is not a duplicate
    settle()
    assert any_api.get(f"{DOCS}/{doc['id']}").status == 404
    assert {h.unit.metadata["documentId"] for h in chunk_hits()} == {again.json()["id"]}


def test_failure_after_the_claim_removes_what_was_written(api, runtime, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("queue went away")

    monkeypatch.setattr(runtime.ingestion_queue, "send", broken)
    r = api.post(DOCS, {"text": HANDBOOK})
    assert r.status == 500
    assert doc_rows() == [] and hash_rows() == [] and chunk_hits() == []


def test_an_abandoned_ingest_is_taken_over_and_can_be_deleted(api, runtime):
    doc = upload(api)
    record = runtime.store.get(keys.documents_pk(RC), doc["id"])
    stuck = {**record.data, "status": "ingesting", "updatedAt": "2020-01-01T00:00:00.000Z"}
    runtime.store.put(Record(record.pk, record.sk, stuck, version=record.version + 1))
    again = api.post(DOCS, {"text": HANDBOOK})
    assert again.status == 202 and again.json()["id"] != doc["id"]  # the stale claim was discarded
    settle()
    assert api.get(f"{DOCS}/{doc['id']}").status == 404
    assert {h.unit.metadata["documentId"] for h in chunk_hits()} == {again.json()["id"]}


def test_documents_are_per_partition(api):
    doc = upload(api)
    other = {"X-Memory-Partition": "other"}
    assert api.get(f"{DOCS}/{doc['id']}", headers=other).status == 404
    r = api.post(DOCS, {"text": HANDBOOK}, headers=other)
    assert r.status == 202 and r.json()["id"] != doc["id"]


def test_raw_httpx_multipart_in_process(api):
    """The in-process path gets the same bytes a client sends (no server in between)."""
    req = httpx.Request("POST", "http://x/", files={"file": ("a.md", HANDBOOK.encode(), "text/markdown")})
    req.read()
    r = api.post(DOCS, raw=req.content, headers={"content-type": req.headers["content-type"]})
    assert r.status == 202, r.text


def test_a_chunk_with_more_facts_than_one_transaction_holds_is_committed_in_halves(runtime):
    from agent_memory.models.extraction import ExtractedAttribute, ExtractedEntity, ExtractionOutput

    people = [f"Person{i}" for i in range(60)]  # 60 new entities + 60 facts + 60 heads = 180 operations
    extraction = ExtractionOutput(
        entities=[ExtractedEntity(name=p, type="person") for p in people],
        attributes=[ExtractedAttribute(entity=p, key="employer", value="Acme") for p in people])
    results = runtime.facts.write_document_facts(RC, [("chunk_x", extraction)], [], [], "2026-01-01T00:00:00Z")
    assert len(results) > 1
    assert sum(len(r.attributes) for r in results) == 60
    stored = rows(keys.attrs_pk(RC, "entity:person/person59"))
    assert [r.data["source"]["kind"] for r in stored if r.data.get("kind") == "attribute"] == ["document"]


def test_forget_removes_a_chunk_from_listing_search_and_retrieval(api):
    doc = api.post(f"{CTX}/documents", {"title": "Handbook", "text": "# Travel\n\nThe Zanzibar office keeps "
                                        "the spare keys in the blue cabinet.\n\n# Food\n\nLunch is served at noon."})
    assert doc.status == 202, doc.text
    settle()
    doc_id = doc.json()["id"]
    r = api.post(f"{CTX}/forget", {"query": "Zanzibar office spare keys blue cabinet", "limit": 1,
                                   "minScore": 0.1})
    assert r.status == 200, r.text
    assert [i["kind"] for i in r.json()["items"]] == ["chunk"] and r.json()["deleted"] == 1
    chunks = api.get(f"{CTX}/documents/{doc_id}/chunks").json()["chunks"]
    assert all("Zanzibar" not in c["text"] for c in chunks) and len(chunks) == 1
    hits = fused_search(get_runtime().search, "Zanzibar spare keys", SearchFilter(context_id="acme", kinds=["chunk"]), k=5)
    assert all("Zanzibar" not in h.unit.text for h in hits)
    q = api.post(f"{CTX}/query", {"query": "Where are the spare keys?"}).json()
    assert all("Zanzibar" not in h["text"] for h in q["hits"])
