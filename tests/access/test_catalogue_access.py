"""The inspector's picker lists under keys: each shows only what the key may read (read
region, reader lists, bound contexts and partitions), on both stores."""

from __future__ import annotations

from typing import Any

import pytest

CTX = "/api/v1/acme"


def pages(api, path: str, limit: int, headers: dict[str, str] | None = None) -> tuple[list[dict], int]:
    items, cursor, count = [], None, 0
    while True:
        r = api.request("GET", f"{path}?limit={limit}" + (f"&cursor={cursor}" if cursor else ""), headers=headers)
        assert r.status == 200, r.text
        body = r.json()
        count += 1
        # /documents is paged by number too: its cursor sits beside the page number
        info = body["page"] if isinstance(body["page"], dict) else body
        items += body["documents" if "documents" in body else "items"]
        if not info["hasMore"]:
            return items, count
        cursor = info["nextCursor"]



KEYS = {"admin": "key-admin-0000000000", "alice": "key-alice-0000000000", "bob": "key-bob-000000000000",
        "carol": "key-carol-0000000000", "mallory": "key-mallory-00000000"}
PRINCIPALS = [
    {"key": KEYS["admin"], "principal": "ops", "admin": True},
    {"key": KEYS["alice"], "principal": "alice", "contexts": ["acme"], "read_region": ["org/acme/user/alice"],
     "write_region": ["org/acme/user/alice"], "default_write_scope": "org/acme/user/alice"},
    {"key": KEYS["bob"], "principal": "bob", "contexts": ["acme"], "read_region": ["org/acme/user/bob"],
     "write_region": ["org/acme/user/bob"], "default_write_scope": "org/acme/user/bob"},
    {"key": KEYS["carol"], "principal": "carol", "contexts": ["acme", "zeta"], "partitions": ["p1"]},
    {"key": KEYS["mallory"], "principal": "mallory", "verbs": ["memory:write"]},
]


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


def as_(who: str, **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[who]}", **extra}


def test_lists_show_only_what_the_key_may_read(api):
    alice, bob, admin = as_("alice"), as_("bob"), as_("admin")
    a = api.request("POST", f"{CTX}/sessions", headers=alice).json()["id"]
    b = api.request("POST", f"{CTX}/sessions", headers=bob).json()["id"]
    assert [s["id"] for s in pages(api, f"{CTX}/sessions", 1, alice)[0]] == [a]
    assert [s["id"] for s in pages(api, f"{CTX}/sessions", 1, bob)[0]] == [b]
    assert [s["id"] for s in pages(api, f"{CTX}/sessions", 1, admin)[0]] == [a, b]

    for who in ("alice", "bob"):
        r = api.request("POST", f"{CTX}/documents", {"text": f"notes of {who}", "title": who}, headers=as_(who))
        assert r.status in (200, 202), r.text
    assert [d["title"] for d in pages(api, f"{CTX}/documents", 5, alice)[0]] == ["alice"]
    assert sorted(d["title"] for d in pages(api, f"{CTX}/documents", 5, admin)[0]) == ["alice", "bob"]

    assert api.request("POST", f"{CTX}/threads/t-open/turns", {"text": "hi"}, headers=admin).status == 201
    assert api.request("PUT", f"{CTX}/threads/t-bob/acl", {"acl_readers": ["bob"]}, headers=admin).status == 200
    assert [t["threadId"] for t in pages(api, f"{CTX}/threads", 5, alice)[0]] == ["t-open"]
    assert [t["threadId"] for t in pages(api, f"{CTX}/threads", 5, bob)[0]] == ["t-bob", "t-open"]
    listed = pages(api, f"{CTX}/threads", 5, admin)[0]
    assert [(t["threadId"], t["aclReaders"]) for t in listed] == [("t-bob", ["bob"]), ("t-open", None)]


def test_contexts_follow_the_keys_binding(api):
    for ctx in ("acme", "other"):
        assert api.request("POST", f"/api/v1/{ctx}/sessions", headers=as_("admin")).status == 201
    assert pages(api, "/api/v1/contexts", 10, as_("alice"))[0] == [{"contextId": "acme", "partitions": ["default"]}]
    assert [c["contextId"] for c in pages(api, "/api/v1/contexts", 1, as_("carol"))[0]] == ["acme", "zeta"]
    assert pages(api, "/api/v1/contexts", 10, as_("carol"))[0][0]["partitions"] == ["p1"]
    assert [c["contextId"] for c in pages(api, "/api/v1/contexts", 10, as_("admin"))[0]] == ["acme", "other"]
    assert api.request("GET", "/api/v1/contexts").status == 401
    assert api.request("GET", "/api/v1/contexts", headers=as_("mallory")).status == 403
    assert api.request("GET", "/api/v1/other/sessions", headers=as_("alice")).status == 403
    assert api.request("GET", f"{CTX}/threads", headers=as_("carol")).status == 403  # partition not bound
