"""Corpus search (POST /documents/query: threshold, expandGraph, filter) and the keyword index
(/documents/keywords, /documents/{id}/keywords: counts as documents share a term and one is
deleted), in process on both stores and over HTTP on SQLite."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.runtime import get_runtime
from agent_memory.services.documents import keywords as kw

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
RC = RequestContext(context_id="acme", principal="local-admin", admin=True)

REFUNDS = """# Refunds

Customers may ask for a refund within 30 days of delivery. The refund policy covers damaged
goods and late parcels; a refund policy exception needs a manager.
"""

SHIPPING = """# Shipping

Parcels ship from the Berlin warehouse. Damaged goods found at the warehouse are not shipped;
the warehouse team repacks them. Refund questions go to support.
"""

PEOPLE_A = "Alice Martin works at Acme. Alice Martin leads the refunds desk."
PEOPLE_B = "Alice Martin lives in Lisbon and speaks Portuguese."


def settle() -> None:
    get_runtime().ingestion_queue.join(timeout=60)


def upload(api, text: str, title: str, **extra) -> str:
    r = api.post(DOCS, {"title": title, "text": text, **extra})
    assert r.status in (200, 202), r.text
    settle()
    doc_id = r.json()["id"]
    assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready"
    return doc_id


# --- extraction (pure) ----------------------------------------------------------------------


def test_extraction_is_deterministic_and_weighs_repeated_phrases():
    got = kw.extract([REFUNDS])
    assert got == kw.extract([REFUNDS])
    by = {k.normalised: k for k in got}
    assert got[0].normalised == "refund policy" and got[0].score == 1.0  # 2 x 2 words
    assert by["refund"].weight == 3 and by["refund"].score == 0.75
    assert "the" not in by and "30" not in by and "may" not in by  # stop words and numbers
    assert "damaged goods" not in by  # a phrase seen once is not kept
    assert all(" " not in k.normalised or k.weight >= 4 for k in got)
    assert kw.normalise("  Refund’s   POLICY ") == "refund policy"


def test_extraction_keeps_the_most_frequent_spelling_and_caps_the_count():
    text = " ".join(f"Term{i} term{i}" for i in range(40)) + " Berlin berlin Berlin"
    got = kw.extract([text])
    assert len(got) == kw.KEYWORDS_PER_DOCUMENT
    assert {k.normalised: k.text for k in got}["berlin"] == "Berlin"


# --- the keyword index ------------------------------------------------------------------------


@pytest.mark.parametrize("store_kind", ["sqlite", "dynamodb"], indirect=True)
def test_keyword_counts_follow_shared_terms_and_deletes(api, store_kind):
    a = upload(api, REFUNDS, "Refunds")
    b = upload(api, SHIPPING, "Shipping")
    listed = api.get(f"{DOCS}/keywords?page_size=200").json()
    counts = {k["normalised"]: k["documentCount"] for k in listed["keywords"]}
    assert counts["refund"] == 2 and counts["damaged"] == 2 and counts["goods"] == 2  # both carry them
    assert counts["refund policy"] == 1 and counts["warehouse"] == 1
    # most documents first, ties alphabetical
    order = [(-k["documentCount"], k["normalised"]) for k in listed["keywords"]]
    assert order == sorted(order)
    assert listed["total"] == len(listed["keywords"])
    assert counts["refunds"] == 1  # a heading counts (chunk text leaves heading lines out)
    assert api.get(f"{DOCS}/{a}").json()["keywordCount"] == len(api.get(f"{DOCS}/{a}/keywords").json()["keywords"])

    one = api.get(f"{DOCS}/keywords/refund").json()
    assert one["documentCount"] == 2 and {d["id"] for d in one["documents"]} == {a, b}
    phrase = api.get(f"{DOCS}/keywords/{quote('refund policy')}").json()
    assert [d["documentId"] for d in phrase["documents"]] == [a] and phrase["text"] == "refund policy"

    mine = api.get(f"{DOCS}/{a}/keywords").json()["keywords"]
    assert mine[0]["normalised"] == "refund policy" and mine[0]["score"] == 1.0
    assert [k["score"] for k in mine] == sorted((k["score"] for k in mine), reverse=True)

    assert api.delete(f"{DOCS}/{a}").status == 204
    counts = {k["normalised"]: k["documentCount"]
              for k in api.get(f"{DOCS}/keywords?page_size=200").json()["keywords"]}
    assert counts["refund"] == 1 and counts["damaged"] == 1 and "refund policy" not in counts
    assert api.get(f"{DOCS}/keywords/{quote('refund policy')}").status == 404
    assert [d["id"] for d in api.get(f"{DOCS}/keywords/refund").json()["documents"]] == [b]
    assert api.get(f"{DOCS}/{a}/keywords").status == 404
    store = get_runtime().store
    assert not store.query(keys.document_keywords_pk(RC, a), limit=10).records
    assert store.get(keys.keywords_pk(RC), "refund policy") is None

    assert api.delete(f"{DOCS}/{b}").status == 204
    assert api.get(f"{DOCS}/keywords").json()["total"] == 0
    assert not store.query(keys.keywords_pk(RC), limit=10).records


def test_keyword_list_filters_pages_and_sorts(any_api):
    upload(any_api, REFUNDS, "Refunds")
    upload(any_api, SHIPPING, "Shipping")
    q = any_api.get(f"{DOCS}/keywords?q=REFUND").json()
    assert {k["normalised"] for k in q["keywords"]} == {"refund", "refund policy", "refunds"} & \
        {k["normalised"] for k in q["keywords"]} and all("refund" in k["normalised"] for k in q["keywords"])
    shared = any_api.get(f"{DOCS}/keywords?minDocumentCount=2").json()["keywords"]
    assert shared and all(k["documentCount"] == 2 for k in shared)
    alpha = any_api.get(f"{DOCS}/keywords?sort=normalised&page_size=500").json()["keywords"]
    assert [k["normalised"] for k in alpha] == sorted(k["normalised"] for k in alpha)
    first = any_api.get(f"{DOCS}/keywords?page=1&page_size=3").json()
    second = any_api.get(f"{DOCS}/keywords?page=2&page_size=3").json()
    assert (first["page"], first["pageSize"], len(first["keywords"]), first["hasMore"]) == (1, 3, 3, True)
    assert not {k["id"] for k in first["keywords"]} & {k["id"] for k in second["keywords"]}
    by_cursor = any_api.get(f"{DOCS}/keywords?limit=3&cursor={first['nextCursor']}").json()
    assert by_cursor["keywords"] == second["keywords"]
    assert any_api.get(f"{DOCS}/keywords?sort=sideways").status == 400
    assert any_api.get(f"{DOCS}/keywords?minDocumentCount=0").status == 400


def test_keyword_search(any_api):
    upload(any_api, REFUNDS, "Refunds")
    upload(any_api, SHIPPING, "Shipping")
    found = any_api.post(f"{DOCS}/keywords/search", {"query": "refund policy"}).json()
    assert found["results"][0]["normalised"] == "refund policy" and found["results"][0]["score"] == 1.0
    assert isinstance(found["queryMs"], int)
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True) and min(scores) < 1.0
    strict = any_api.post(f"{DOCS}/keywords/search", {"query": "refund policy", "threshold": 0.9}).json()
    assert [r["normalised"] for r in strict["results"]] == ["refund policy"]
    assert len(any_api.post(f"{DOCS}/keywords/search", {"query": "refund", "k": 1}).json()["results"]) == 1
    assert any_api.post(f"{DOCS}/keywords/search", {"query": "zeppelin"}).json()["results"] == []
    assert any_api.post(f"{DOCS}/keywords/search", {"query": " "}).status == 400
    assert any_api.post(f"{DOCS}/keywords/search", {"query": "x", "threshold": 2}).status == 400


# --- corpus search --------------------------------------------------------------------------


@pytest.mark.parametrize("store_kind", ["sqlite", "dynamodb"], indirect=True)
def test_corpus_query_answers_chunks_in_the_clients_shape(api, store_kind):
    a = upload(api, REFUNDS, "Refunds", source="kb")
    b = upload(api, SHIPPING, "Shipping", source="wiki")
    body = api.post(f"{DOCS}/query", {"query": "refund policy for damaged goods", "k": 5}).json()
    assert isinstance(body["queryMs"], int) and body["results"]
    top = body["results"][0]
    assert top["score"] == 1.0 and top["graphEvidence"] is None
    assert top["chunk"]["documentId"] == a and top["document"]["id"] == a and top["document"]["source"] == "kb"
    assert top["chunk"]["text"].startswith("Customers may ask")  # no context line
    assert {r["chunk"]["documentId"] for r in body["results"]} <= {a, b}
    assert all(r["chunk"]["id"].startswith("chunk_") for r in body["results"])


def test_corpus_query_threshold_drops_weak_hits(any_api):
    upload(any_api, REFUNDS, "Refunds")
    upload(any_api, SHIPPING, "Shipping")
    everything = any_api.post(f"{DOCS}/query", {"query": "refund policy exception manager"}).json()["results"]
    assert len(everything) == 2 and everything[1]["score"] < 1.0
    cut = everything[1]["score"] + (1.0 - everything[1]["score"]) / 2
    kept = any_api.post(f"{DOCS}/query", {"query": "refund policy exception manager", "threshold": cut}).json()
    assert [r["chunk"]["id"] for r in kept["results"]] == [everything[0]["chunk"]["id"]]
    assert any_api.post(f"{DOCS}/query", {"query": "refund", "threshold": 1.5}).status == 400


def test_corpus_query_filters_by_document_metadata(any_api):
    a = upload(any_api, REFUNDS, "Refunds", source="kb", labels=["policy"])
    b = upload(any_api, SHIPPING, "Shipping", source="wiki")
    q = "damaged goods refund"
    both = {r["chunk"]["documentId"] for r in any_api.post(f"{DOCS}/query", {"query": q}).json()["results"]}
    assert both == {a, b}
    for flt, want in (({"source": "wiki"}, {b}), ({"source": ["kb", "nowhere"]}, {a}), ({"labels": ["policy"]}, {a}),
                      ({"title": "Shipping"}, {b}), ({"documentId": a}, {a}), ({"source": "nowhere"}, set()),
                      ({"mimeType": "text/markdown", "source": "kb"}, {a})):
        got = any_api.post(f"{DOCS}/query", {"query": q, "filter": flt}).json()["results"]
        assert {r["chunk"]["documentId"] for r in got} == want, flt
    assert any_api.post(f"{DOCS}/query", {"query": q, "filter": {"colour": "red"}}).status == 400
    assert any_api.post(f"{DOCS}/query", {"query": q, "filter": {"source": 3}}).status == 400


def test_corpus_query_expand_graph_adds_chunks_of_linked_entities(any_api):
    a = upload(any_api, PEOPLE_A, "Desk")
    b = upload(any_api, PEOPLE_B, "Languages")
    q = "who leads the refunds desk"
    plain = any_api.post(f"{DOCS}/query", {"query": q, "k": 1}).json()["results"]
    assert [r["chunk"]["documentId"] for r in plain] == [a]
    expanded = any_api.post(f"{DOCS}/query", {"query": q, "k": 1, "expandGraph": True}).json()["results"]
    assert [r["chunk"]["documentId"] for r in expanded] == [a, b]
    extra = expanded[1]
    assert extra["score"] == 0.5 and extra["graphEvidence"]
    evidence = extra["graphEvidence"][0]
    assert evidence["entity"].endswith("alice_martin") or "alice" in evidence["entity"]
    assert evidence["via"] == expanded[0]["chunk"]["id"]
    graph = any_api.post(f"{DOCS}/query", {"query": q, "k": 1, "mode": "graph"}).json()["results"]
    assert [r["chunk"]["id"] for r in graph] == [r["chunk"]["id"] for r in expanded]
    # the filter and the threshold hold for the added chunks too
    only_a = any_api.post(f"{DOCS}/query", {"query": q, "k": 1, "expandGraph": True, "filter": {"id": a}}).json()
    assert [r["chunk"]["documentId"] for r in only_a["results"]] == [a]
    high = any_api.post(f"{DOCS}/query", {"query": q, "k": 1, "expandGraph": True, "threshold": 0.6}).json()
    assert [r["chunk"]["documentId"] for r in high["results"]] == [a]


def test_indexing_a_document_again_replaces_its_terms(api):
    doc_id = upload(api, REFUNDS, "Refunds")
    index = get_runtime().keywords
    doc = get_runtime().documents.get(RC, doc_id)
    assert index.add_document(RC, doc, [REFUNDS]) == len(kw.extract([REFUNDS]))  # the same again: nothing moves
    before = {k["normalised"]: k["documentCount"] for k in api.get(f"{DOCS}/keywords?page_size=500").json()["keywords"]}
    assert before["refund policy"] == 1
    index.add_document(RC, doc, ["Warehouse staff repack parcels. Warehouse staff sort parcels."])
    after = {k["normalised"]: k["documentCount"] for k in api.get(f"{DOCS}/keywords?page_size=500").json()["keywords"]}
    assert "refund policy" not in after and after["warehouse staff"] == 1 and after["parcels"] == 1
    mine = [k["normalised"] for k in api.get(f"{DOCS}/{doc_id}/keywords").json()["keywords"]]
    assert mine[0] == "warehouse staff" and "refund" not in mine
