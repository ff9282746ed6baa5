"""PUT /documents/{id} (reprocess from the stored original) and POST /documents/recompute-links,
in process and over the local server, on both record stores: ids kept, unchanged chunks
carried over without model calls, vanished chunks removed from the store and search,
idempotent repeats, and the chunk-entity links rebuilt against the entities stored now."""

from __future__ import annotations

import pytest
from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.models.records import Chunk
from agent_memory.ports import SearchFilter
from agent_memory.runtime import get_runtime
from agent_memory.services.documents import chunking, links
from agent_memory.services.documents.document_service import carry_plan

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
RC = RequestContext(context_id="acme", principal="local-admin", admin=True)

LONG = " ".join(f"Expense rule {i} says receipts for category {i} are filed within {i + 3} days." for i in range(12))
GUIDE = f"""# Guide

## Intro

Welcome to the Acme guide. Alice works at Acme.

## Expenses

{LONG}

## Travel

Book trips through the travel portal.
"""


def settle() -> None:
    get_runtime().ingestion_queue.join(timeout=60)


def chunks_of(api, doc_id: str) -> list[dict]:
    r = api.get(f"{DOCS}/{doc_id}/chunks?limit=100")
    assert r.status == 200, r.text
    return r.json()["chunks"]


def stored_chunks(doc_id: str) -> list[Chunk]:
    return [Chunk.from_item(r.data) for r in get_runtime().store.query(keys.chunks_pk(RC, doc_id), limit=1000).records]


def chunk_units(k: int = 50) -> list:
    return fused_search(get_runtime().search, "expense receipts guide travel welcome",
                        SearchFilter(context_id="acme", kinds=["chunk"]), k=k)


def upload(api, text: str = GUIDE) -> str:
    r = api.post(DOCS, {"title": "Guide", "text": text})
    assert r.status == 202, r.text
    settle()
    return r.json()["id"]


def test_reprocess_after_a_chunker_change_keeps_the_ids_and_extracts_only_changed_chunks(any_api, model,
                                                                                       monkeypatch):
    doc_id = upload(any_api)
    before = chunks_of(any_api, doc_id)
    assert len(before) == 3 and any_api.get(f"{DOCS}/{doc_id}").json()["version"] == 1
    by_text = {c["text"]: c["id"] for c in before}
    calls = model.calls["structured"]

    monkeypatch.setattr(chunking, "MAX_CHARS", 400)  # the long section now splits
    r = any_api.request("PUT", f"{DOCS}/{doc_id}")
    assert r.status == 202, r.text
    body = r.json()
    assert body["id"] == doc_id and body["status"] == "ingesting" and body["queued"] is True
    assert body["deduplicated"] is False and len(body["contentHash"]) == 64
    settle()

    doc = any_api.get(f"{DOCS}/{doc_id}").json()
    assert doc["status"] == "ready" and doc["version"] == 2
    after = chunks_of(any_api, doc_id)
    assert doc["chunksTotal"] == doc["chunksDone"] == len(after) > 3
    assert [c["ordinal"] for c in after] == list(range(len(after)))
    kept = [c for c in after if c["text"] in by_text]
    assert len(kept) == 2  # the intro and the travel section are unchanged
    assert all(c["id"] == by_text[c["text"]] for c in kept)
    fresh = [c for c in after if c["text"] not in by_text]
    assert fresh and all(c["id"] not in by_text.values() for c in fresh)
    travel = next(c for c in after if "travel portal" in c["text"])
    assert travel["ordinal"] == len(after) - 1  # carried over to its new place
    # Only the new chunks went to the model (windows of them), the carried ones did not.
    assert 0 < model.calls["structured"] - calls <= len(fresh)
    # The store and search hold exactly the new chunking: the vanished long chunk is gone.
    assert sorted(c.id for c in stored_chunks(doc_id)) == sorted(c["id"] for c in after)
    assert {h.unit.id for h in chunk_units()} == {c["id"] for c in after}
    assert not any(r.sk for pk in keys.document_parts_pks(RC, doc_id)
                   for r in get_runtime().store.query(pk, limit=10).records)


def test_reprocess_without_a_change_carries_every_chunk_and_calls_no_model(any_api, model):
    doc_id = upload(any_api)
    before = chunks_of(any_api, doc_id)
    calls = model.calls["structured"]
    assert any_api.request("PUT", f"{DOCS}/{doc_id}").status == 202
    settle()
    assert chunks_of(any_api, doc_id) == before
    assert model.calls["structured"] == calls
    assert any_api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready"


def test_reprocess_while_one_runs_starts_no_second(api, runtime, monkeypatch):
    doc_id = upload(api)
    sent = []
    monkeypatch.setattr(runtime.ingestion_queue, "send", sent.append)
    first = api.request("PUT", f"{DOCS}/{doc_id}")
    second = api.request("PUT", f"{DOCS}/{doc_id}")
    assert first.status == second.status == 202
    assert first.json()["queued"] is True and second.json()["queued"] is False
    assert second.json()["status"] == "ingesting" and len(sent) == 1
    runtime.ingestion.process(sent[0])
    assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready"


def test_reprocess_requeues_an_ingest_that_died(api, runtime, monkeypatch):
    doc_id = upload(api)
    before = chunks_of(api, doc_id)
    store = runtime.store
    record = store.get(keys.documents_pk(RC), doc_id)
    stuck = {**record.data, "status": "ingesting", "updatedAt": "2020-01-01T00:00:00Z"}
    store.put(type(record)(record.pk, record.sk, stuck, version=record.version + 1))
    r = api.request("PUT", f"{DOCS}/{doc_id}")
    assert r.status == 202 and r.json()["queued"] is True
    settle()
    assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready" and chunks_of(api, doc_id) == before


def test_reprocess_honours_the_idempotency_key(api, runtime, monkeypatch):
    doc_id = upload(api)
    sent = []
    monkeypatch.setattr(runtime.ingestion_queue, "send", sent.append)
    headers = {"Idempotency-Key": "reprocess-1"}
    first = api.request("PUT", f"{DOCS}/{doc_id}", None, headers=headers)
    replay = api.request("PUT", f"{DOCS}/{doc_id}", None, headers=headers)
    assert first.status == 202 and replay.headers.get("idempotent-replayed") == "true"
    assert replay.json() == first.json() and len(sent) == 1


def test_reprocess_of_an_unknown_document_is_404_and_a_failed_original_keeps_the_chunks(any_api, runtime):
    assert any_api.request("PUT", f"{DOCS}/doc_01nothere").status == 404
    doc_id = upload(any_api)
    before = chunks_of(any_api, doc_id)
    doc = any_api.get(f"{DOCS}/{doc_id}").json()
    original = runtime.documents.store.get(keys.documents_pk(RC), doc_id).data["originalKey"]
    runtime.upload_store.delete(original)
    assert any_api.request("PUT", f"{DOCS}/{doc_id}").status == 202
    settle()
    failed = any_api.get(f"{DOCS}/{doc_id}").json()
    assert failed["status"] == "failed" and failed["error"]["code"] == "original_unavailable"
    assert chunks_of(any_api, doc_id) == before and failed["version"] == doc["version"]


def test_recompute_links_links_chunks_to_the_entities_they_mention(any_api):
    doc_id = upload(any_api)
    alice = "entity:person/alice"
    intro = next(c for c in stored_chunks(doc_id) if "Alice" in c.text)
    assert alice in (intro.entity_ids or [])  # linked at ingestion (its own facts created Alice)
    # An entity stored after the document: only a recompute links it.
    store = get_runtime().store
    record = store.get(keys.entities_pk(RC), keys.entity_sk(alice))
    portal = "entity:other/travel-portal"
    store.put(type(record)(record.pk, keys.entity_sk(portal), {**record.data, "id": portal, "name": "Travel portal"}))
    travel = next(c for c in stored_chunks(doc_id) if "travel portal" in c.text)
    assert portal not in (travel.entity_ids or [])
    r = any_api.post(f"{DOCS}/recompute-links", None)
    assert r.status == 202, r.text
    body = r.json()
    assert body["documentsRelinked"] == 1 and body["continued"] is False
    linked = {c.id: set(c.entity_ids or []) for c in stored_chunks(doc_id)}
    assert body["linksEmitted"] == len(set().union(*linked.values()))
    assert alice in linked[intro.id] and portal in linked[travel.id] and portal not in linked[intro.id]
    units = {h.unit.id: h.unit for h in chunk_units()}
    assert alice in units[intro.id].entity_ids and alice in units[intro.id].labels
    again = any_api.post(f"{DOCS}/recompute-links", None)
    assert again.status == 202 and again.json()["linksEmitted"] == body["linksEmitted"]  # idempotent


def test_recompute_links_drops_a_link_to_a_removed_entity(api, runtime):
    doc_id = upload(api)
    alice = "entity:person/alice"
    store = runtime.store
    record = store.get(keys.entities_pk(RC), keys.entity_sk(alice))
    store.put(type(record)(record.pk, record.sk, {**record.data, "deleted": True}))
    assert api.post(f"{DOCS}/recompute-links", None).status == 202
    assert all(alice not in (c.entity_ids or []) for c in stored_chunks(doc_id))


def test_recompute_links_beyond_the_request_budget_continues_in_the_worker(api, runtime):
    ids = [upload(api, GUIDE.replace("Guide", f"Guide {i}")) for i in range(3)]
    result = runtime.documents.recompute_links(RC, chunk_budget=3)  # one document (3 chunks) in the request
    assert result.documents == 1 and result.next_after == ids[0]
    settle()  # the queued job relinked the other two
    for doc_id in ids:
        intro = next(c for c in stored_chunks(doc_id) if "Alice" in c.text)
        assert "entity:person/alice" in (intro.entity_ids or [])


def test_a_document_over_the_request_budget_goes_to_the_worker_whole(api, runtime, monkeypatch):
    doc_id = upload(api)
    sent = []
    monkeypatch.setattr(runtime.ingestion_queue, "send", sent.append)
    result = runtime.documents.recompute_links(RC, chunk_budget=2)  # the document has 3 chunks
    assert (result.documents, result.links, result.next_after) == (0, 0, "")
    assert [(j.task, j.after) for j in sent] == [("links", "")]
    assert runtime.ingestion.process(sent[0]) == "relinked"
    intro = next(c for c in stored_chunks(doc_id) if "Alice" in c.text)
    assert "entity:person/alice" in (intro.entity_ids or [])


def test_the_links_job_hands_on_when_out_of_time(runtime, api):
    from agent_memory.services.documents.ingestion import IngestionJob

    ids = [upload(api, GUIDE.replace("Guide", f"Guide {i}")) for i in range(2)]
    handed = []
    # out of time from the start: a delivery still relinks one document, then hands on
    status = runtime.ingestion.deliver(IngestionJob.for_links(RC, ""), should_stop=lambda: True,
                                       hand_on=handed.append)
    assert status == "continued" and handed[0].task == "links" and handed[0].after == ids[0]
    assert runtime.ingestion.deliver(handed[0], should_stop=lambda: False, hand_on=handed.append) == "relinked"


def test_a_links_job_survives_the_queue_message_round_trip():
    from agent_memory.services.documents.ingestion import IngestionJob

    job = IngestionJob.for_links(RequestContext(context_id="acme", principal="p", read_region=("org/acme",)), "doc_1")
    back = IngestionJob.from_message(job.to_message())
    assert back == job and back.request_context().read_region == ("org/acme",)
    plain = IngestionJob.for_document(RC, "doc_2")
    assert IngestionJob.from_message(plain.to_message()) == plain


def test_entity_names_match_whole_words_only():
    names = links.EntityNames()
    names.add("entity:org/acme", "Acme")
    names.add("entity:person/jose-garcia", "José García")
    names.add("entity:person/user", "user")
    assert names.mentioned("At ACME, jose garcia met the user.") == ["entity:org/acme", "entity:person/jose-garcia"]
    assert names.mentioned("Acmeville has no Garcia José") == []


@pytest.mark.parametrize("old_texts,new_texts,kept,removed", [
    (["a", "b", "c"], ["a", "b", "c"], 3, 0),
    (["a", "b", "c"], ["a", "x", "y", "c"], 2, 2),  # b vanished, c moved
    (["a", "b"], ["b"], 1, 2),  # a vanished, b moved to 0
    (["a", "a"], ["a"], 1, 1),
])
def test_carry_plan(old_texts, new_texts, kept, removed):
    old = [Chunk(id=f"chunk_{i}", context_id="acme", document_id="doc_1", text=t, ordinal=i, offset=i,
                 position_percent=0) for i, t in enumerate(old_texts)]
    new = [chunking.Chunk(ordinal=i, offset=i, text=t, heading_path=(), position_percent=0)
           for i, t in enumerate(new_texts)]
    counter = iter(range(100))
    plan = carry_plan(old, new, lambda: f"chunk_new{next(counter)}")
    assert plan.carried == kept and len(plan.removed) == removed
    for c, cid in zip(new, plan.chunk_ids, strict=True):
        same = [o for o in old if o.text == c.text]
        assert (cid in {o.id for o in same}) == bool(same) or cid.startswith("chunk_new")
