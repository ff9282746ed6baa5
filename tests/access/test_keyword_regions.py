"""The keyword index and corpus search under keys: counts, keyword documents and chunk hits
are those of the documents the key may read (read regions), on both stores."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.runtime import get_runtime

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
KEYS = {"admin": "key-admin-0000000000", "alice": "key-alice-0000000000", "bob": "key-bob-000000000000"}
PRINCIPALS = [
    {"key": KEYS["admin"], "principal": "ops", "admin": True},
    {"key": KEYS["alice"], "principal": "alice", "contexts": ["acme"], "read_region": ["org/acme/user/alice"],
     "write_region": ["org/acme/user/alice"], "default_write_scope": "org/acme/user/alice"},
    {"key": KEYS["bob"], "principal": "bob", "contexts": ["acme"], "read_region": ["org/acme/user/bob"],
     "write_region": ["org/acme/user/bob"], "default_write_scope": "org/acme/user/bob"},
]


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


def as_(who: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[who]}"}


@pytest.mark.parametrize("store_kind", ["sqlite", "dynamodb"], indirect=True)
def test_keywords_and_corpus_search_follow_the_read_region(api, store_kind):
    ids = {}
    for who, text in (("alice", "Parcel tracking numbers arrive by email. Parcel tracking is free."),
                      ("bob", "Parcel tracking for bulk orders. Parcel tracking costs extra.")):
        r = api.request("POST", DOCS, {"text": text, "title": who}, headers=as_(who))
        assert r.status == 202, r.text
        ids[who] = r.json()["id"]
    get_runtime().ingestion_queue.join(timeout=60)

    def count(who: str, term: str) -> int | None:
        rows = api.request("GET", f"{DOCS}/keywords?page_size=500", headers=as_(who)).json()["keywords"]
        return {k["normalised"]: k["documentCount"] for k in rows}.get(term)

    assert count("admin", "parcel tracking") == 2
    assert count("alice", "parcel tracking") == 1 and count("bob", "parcel tracking") == 1
    assert count("alice", "bulk") is None and count("bob", "email") is None
    detail = api.request("GET", f"{DOCS}/keywords/parcel%20tracking", headers=as_("alice")).json()
    assert [d["id"] for d in detail["documents"]] == [ids["alice"]] and detail["documentCount"] == 1
    assert api.request("GET", f"{DOCS}/keywords/bulk", headers=as_("alice")).status == 404
    assert api.request("GET", f"{DOCS}/{ids['bob']}/keywords", headers=as_("alice")).status == 404
    found = api.request("POST", f"{DOCS}/keywords/search", {"query": "bulk"}, headers=as_("alice")).json()
    assert found["results"] == []

    hits = api.request("POST", f"{DOCS}/query", {"query": "parcel tracking", "expandGraph": True},
                       headers=as_("alice")).json()["results"]
    assert hits and {h["chunk"]["documentId"] for h in hits} == {ids["alice"]}
    both = api.request("POST", f"{DOCS}/query", {"query": "parcel tracking"}, headers=as_("admin")).json()
    assert {h["chunk"]["documentId"] for h in both["results"]} == set(ids.values())
    by_id = api.request("POST", f"{DOCS}/query", {"query": "parcel tracking", "filter": {"id": ids["bob"]}},
                        headers=as_("alice")).json()
    assert by_id["results"] == []


def test_a_scope_forget_takes_the_documents_keywords_with_it(api):
    ids = {}
    for who in ("alice", "bob"):
        r = api.request("POST", DOCS, {"text": "Badge readers sit at the door. Badge readers log entries.",
                                       "title": who}, headers=as_(who))
        ids[who] = r.json()["id"]
    get_runtime().ingestion_queue.join(timeout=60)
    keyword = f"{DOCS}/keywords/badge%20readers"
    assert api.request("GET", keyword, headers=as_("admin")).json()["documentCount"] == 2
    r = api.request("POST", f"{CTX}/scopes/forget", {"path": "org/acme/user/bob"}, headers=as_("admin"))
    assert r.status == 200, r.text
    assert api.request("GET", f"{DOCS}/{ids['bob']}", headers=as_("admin")).status == 404
    detail = api.request("GET", keyword, headers=as_("admin")).json()
    assert detail["documentCount"] == 1 and [d["id"] for d in detail["documents"]] == [ids["alice"]]
    listed = api.request("GET", f"{DOCS}/keywords?page_size=500", headers=as_("admin")).json()["keywords"]
    assert {k["normalised"]: k["documentCount"] for k in listed}["badge readers"] == 1
    from agent_memory.access.request_context import RequestContext
    from agent_memory.kernel import storage_keys as keys

    rc = RequestContext(context_id="acme", principal="ops", admin=True)
    assert not get_runtime().store.query(keys.document_keywords_pk(rc, ids["bob"]), limit=5).records
