"""Erasure receipts (issue 70): every removal route returns or names a receipt of what it took
out of each place, stored in the audit log with ids and hashes only; ``GET /receipts/{id}``
reads it and ``POST /receipts/{id}/verify`` re-checks every place. The text is planted in every
place first (turn and fact rows, search units, an idempotency reply, the response cache, the
query-embedding cache, traces, a document's original and chunk) and is gone from each after a
purge. On both record stores."""

from __future__ import annotations

import hashlib
import json

from agent_memory.runtime import get_runtime

CTX = "/api/v1/acme"
SECRET = "My locker combination is 4417 and it opens the gym locker by the pool"
DOC = "# Gym\n\nThe gym locker by the pool has combination 4417, says the handbook.\n\n# Food\n\nLunch is at noon.\n"


def everything_stored() -> str:
    """Every row of the context as stored (audit included), read behind the service's back."""
    return json.dumps([r.data for r in get_runtime().store.scan("c#acme#")])


def test_a_purge_receipt_names_every_place_and_verify_finds_nothing_left(api):
    rt = get_runtime()
    said = api.post(f"{CTX}/chat", {"message": SECRET}).json()
    r = api.post(f"{CTX}/facts", {"text": SECRET + " (noted)", "sessionId": said["sessionId"]},
                 headers={"Idempotency-Key": "plant-1"})
    assert r.status in (200, 201), r.text
    doc = api.post(f"{CTX}/documents", {"title": "Gym", "text": DOC}).json()["id"]
    rt.ingestion_queue.join(timeout=60)
    before = everything_stored()
    assert "4417" in before and "4417" in api.get(f"{CTX}/traces/{said['traceId']}").text
    assert any("4417" in q for q in rt.embedder._cache)  # the chat's query embedding

    preview = api.post(f"{CTX}/forget", {"query": SECRET, "limit": 10, "minScore": 0.2, "purge": True,
                                         "dryRun": True}).json()["receipt"]
    assert preview["id"] is None and preview["dryRun"] is True and preview["records"]
    forgot = api.post(f"{CTX}/forget", {"query": SECRET, "limit": 10, "minScore": 0.2, "purge": True})
    assert forgot.status == 200, forgot.text
    receipt = forgot.json()["receipt"]
    assert receipt["id"].startswith("rcpt_") and receipt["purge"] is True
    assert set(preview) == set(receipt)  # the preview has the same shape
    kinds = set(receipt["records"])
    assert {"turn", "chunk"} <= kinds and kinds & {"attribute", "relation", "action"}, receipt
    assert receipt["searchUnits"] and receipt["originals"] == [f"originals/{doc}"]
    assert receipt["traces"] and said["traceId"] in receipt["traces"]
    assert receipt["idempotencyReplies"] >= 1 and receipt["queryEmbeddings"] >= 1
    assert hashlib.sha256(SECRET.encode()).hexdigest() in receipt["contentHashes"]

    # stored with ids and hashes only, in the audit log, and readable by id
    assert api.get(f"{CTX}/receipts/{receipt['id']}").json() == receipt
    audit = api.get(f"{CTX}/audit?limit=200").json()
    row = next(r for r in audit["rows"] if r.get("receiptId") == receipt["id"])
    assert row["reason"] == "erasure" and row["kind"] == "decision" and row["receipt"] == receipt
    after = everything_stored()
    assert "4417" not in after, [line for line in after.split('"') if "4417" in line][:5]
    assert "4417" not in api.get(f"{CTX}/traces/{said['traceId']}").text
    assert not any("4417" in q for q in rt.embedder._cache), [q for q in rt.embedder._cache if "4417" in q]

    verified = api.post(f"{CTX}/receipts/{receipt['id']}/verify", {})
    assert verified.status == 200, verified.text
    assert verified.json()["clean"] is True and verified.json()["remaining"] == [], verified.text
    assert verified.json()["checked"]["records"] >= 3


def test_verify_names_what_remains_after_a_soft_forget(api):
    api.post(f"{CTX}/facts", {"text": SECRET})
    receipt = api.post(f"{CTX}/forget", {"query": SECRET, "limit": 5, "minScore": 0.2}).json()["receipt"]
    verified = api.post(f"{CTX}/receipts/{receipt['id']}/verify", {}).json()
    # a soft forget keeps tombstones: verify says so, place by place
    assert verified["clean"] is False
    assert {r["state"] for r in verified["remaining"]} == {"tombstone"}


def test_204_removals_name_their_receipt_in_a_header(api):
    said = api.post(f"{CTX}/chat", {"message": SECRET}).json()
    r = api.delete(f"{CTX}/sessions/{said['sessionId']}")
    assert r.status == 204 and r.body in (b"", "")
    rid = r.headers["x-erasure-receipt"]
    receipt = api.get(f"{CTX}/receipts/{rid}").json()
    assert receipt["action"] == "session.delete" and receipt["records"]["turn"]
    assert api.post(f"{CTX}/receipts/{rid}/verify", {}).json()["clean"] is True

    doc = api.post(f"{CTX}/documents", {"title": "Gym", "text": DOC}).json()["id"]
    get_runtime().ingestion_queue.join(timeout=60)
    r = api.delete(f"{CTX}/documents/{doc}")
    assert r.status == 204
    receipt = api.get(f"{CTX}/receipts/{r.headers['x-erasure-receipt']}").json()
    assert receipt["action"] == "document.delete" and receipt["records"]["document"] == [doc]
    assert receipt["records"]["chunk"] and f"originals/{doc}" in receipt["originals"]
    assert api.post(f"{CTX}/receipts/{receipt['id']}/verify", {}).json()["clean"] is True

    api.post(f"{CTX}/facts", {"text": "Dana Whitfield works at Globex."})
    entity = "person/dana-whitfield"
    r = api.delete(f"{CTX}/entities/{entity}")
    assert r.status == 204, r.text
    receipt = api.get(f"{CTX}/receipts/{r.headers['x-erasure-receipt']}").json()
    assert receipt["action"] == "entity.delete" and receipt["records"]


def test_a_receipt_of_another_context_or_a_made_up_id_is_404(api):
    assert api.get(f"{CTX}/receipts/rcpt_01hzzzzzzzzzzzzzzzzzzzzzzz").status == 404
    assert api.get(f"{CTX}/receipts/nonsense").status == 404
    assert api.post(f"{CTX}/receipts/rcpt_01hzzzzzzzzzzzzzzzzzzzzzzz/verify", {}).status == 404
