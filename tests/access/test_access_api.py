"""Grants on keys, end to end (both record stores, in process): context and partition
binding, verbs, write regions (403, nothing written), read regions (narrow, never 403),
delegation (the intersection), idempotency per principal, restricted threads, the audit."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.runtime import Runtime
from tests.support.callers import As

KEYS = {
    "admin": "key-admin-0000000000",
    "alice": "key-alice-0000000000",
    "bob": "key-bob-000000000000",
    "support": "key-support-00000000",
    "carol": "key-carol-0000000000",
}
PRINCIPALS = [
    {"key": KEYS["admin"], "principal": "ops", "admin": True},
    {"key": KEYS["alice"], "principal": "alice", "contexts": ["acme"],
     "read_region": ["org/acme/user/alice", "org/acme/shared"], "write_region": ["org/acme/user/alice"],
     "default_write_scope": "org/acme/user/alice"},
    {"key": KEYS["bob"], "principal": "bob", "contexts": ["acme"],
     "read_region": ["org/acme/user/bob", "org/acme/shared"], "write_region": ["org/acme/user/bob"],
     "default_write_scope": "org/acme/user/bob"},
    {"key": KEYS["support"], "principal": "support", "contexts": ["acme"], "verbs": ["memory:read", "delegate"],
     "read_region": ["org/acme/user/*", "org/acme/shared"], "write_region": ["org/acme/support"]},
    {"key": KEYS["carol"], "principal": "carol", "contexts": ["acme"], "partitions": ["p1"]},
]


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


@pytest.fixture
def as_(api: Any):
    return lambda who, **kw: As(api, KEYS[who], **kw)


def values(caller: As) -> set[str]:
    r = caller.get("/state")
    assert r.status == 200, r.text
    state = r.json()
    return {a["value"] for c in ("identity", "knowledge", "context") for a in state[c]["attributes"]}


def write(caller: As, text: str, **extra: Any):
    return caller.post("/facts", {"text": text, **extra})


def test_a_key_is_bound_to_its_contexts_and_partitions(as_):
    r = as_("bob", context="/api/v1/other").get("/state")
    assert r.status == 403 and r.json()["code"] == "context_not_bound"
    assert as_("carol").get("/state").status == 403  # default partition: not bound
    r = as_("carol", partition="p2").post("/facts", {"text": "I live in Paris."})
    assert r.status == 403 and r.json()["code"] == "partition_not_bound"
    assert as_("carol", partition="p1").get("/state").status == 200
    assert as_("admin", context="/api/v1/other").get("/state").status == 200  # unbound key: any context


def test_writes_outside_the_write_region_are_403_and_write_nothing(as_):
    assert write(as_("alice"), "I live in London.").status == 200
    before = values(as_("admin"))
    r = write(as_("bob"), "I live in Rome.", scopes=[["org/acme/user/alice"]])
    assert r.status == 403 and r.json()["scope"] == "org/acme/user/alice"
    r = write(as_("bob"), "I live in Rome.", scopes=[["org/acme/user/bob", "org/acme/shared"]])
    assert r.status == 403 and r.json()["scope"] == "org/acme/shared"
    assert as_("bob").post("/sessions", {"scopes": [["org/acme/other"]]}).status == 403
    assert values(as_("admin")) == before


def test_reads_narrow_to_the_read_region_and_never_403(as_):
    assert write(as_("alice"), "I live in London.").status == 200
    assert write(as_("bob"), "I live in Rome.").status == 200
    assert "London" in values(as_("alice")) and "Rome" not in values(as_("alice"))
    assert "Rome" in values(as_("bob")) and "London" not in values(as_("bob"))
    assert {"London", "Rome"} <= values(as_("support"))  # org/acme/user/* covers both
    r = as_("bob").post("/query", {"query": "where does the user live", "k": 10})
    assert r.status == 200
    assert "London" not in r.text


def test_verbs_are_enforced(as_):
    r = write(as_("support"), "I live in Oslo.", scopes=[["org/acme/support"]])
    assert r.status == 403 and r.json()["code"] == "verb_not_granted"
    assert as_("support").post("/forget", {"query": "Oslo"}).status == 403
    assert as_("support").post("/query", {"query": "anything"}).status == 200  # a read POST
    assert as_("bob").get("/audit").status == 403


def test_delegation_is_the_intersection_and_is_audited(as_):
    assert write(as_("alice"), "I live in London.").status == 200
    assert write(as_("bob"), "I live in Rome.").status == 200
    for_alice = as_("support", on_behalf_of="alice")
    assert values(for_alice) == {"London"}
    assert values(as_("support", on_behalf_of="bob")) == {"Rome"}
    # bob holds no 'delegate': he cannot read as alice
    r = as_("bob", on_behalf_of="alice").get("/state")
    assert r.status == 403 and r.json()["code"] == "verb_not_granted"
    assert as_("support", on_behalf_of="nobody").get("/state").status == 403
    # the target's verbs still apply (support cannot write, alice can; the caller's verbs too)
    assert write(for_alice, "I like tea.").status == 403
    # an admin on behalf of bob sees bob's view, not everything
    assert values(as_("admin", on_behalf_of="bob")) == {"Rome"}
    audit = as_("admin").get("/audit")
    assert audit.status == 200
    delegated = [a for a in audit.json()["rows"] if a["reason"] == "delegation"]
    assert {(a["principal"], a["onBehalfOf"]) for a in delegated} >= {("support", "alice"), ("ops", "bob")}
    assert all(a["action"].startswith("GET /api/v1/acme/") for a in delegated)


def test_delegated_writes_land_in_the_intersection(as_):
    r = write(as_("admin", on_behalf_of="alice"), "I live in Lisbon.")
    assert r.status == 200
    assert "Lisbon" in values(as_("alice")) and "Lisbon" not in values(as_("bob"))
    r = write(as_("admin", on_behalf_of="alice"), "I live in Rome.", scopes=[["org/acme/user/bob"]])
    assert r.status == 403


def test_idempotency_replies_belong_to_their_principal(as_):
    body = {"text": "I live in London."}
    first = as_("alice").post("/facts", body, headers={"Idempotency-Key": "same-key"})
    assert first.status == 200
    other = as_("bob").post("/facts", body, headers={"Idempotency-Key": "same-key"})
    assert other.status == 200
    assert other.json() != first.json()
    assert "London" in values(as_("bob"))  # bob's own write ran, in his region


def test_restricted_threads_answer_like_missing_ones(as_):
    admin, bob = as_("admin"), as_("bob")
    assert admin.request("PUT", "/threads/t-private/acl", {"acl_readers": ["alice"]}).status == 200
    assert as_("alice").post("/threads/t-private/turns", {"text": "hello"}).status == 201
    for path in ("/threads/t-private", "/threads/t-private/turns", "/threads/t-private/turns/1"):
        assert bob.get(path).status == 404, path
        assert bob.get(path.replace("t-private", "t-missing")).status == 404
    # /context too: a restricted thread answers exactly like a missing one, 404 (README,
    # docs/access.md, openapi.yaml).
    hidden = bob.post("/threads/t-private/context", {"query": "hello"})
    missing = bob.post("/threads/t-missing/context", {"query": "hello"})
    assert hidden.status == missing.status == 404
    assert {k: v for k, v in hidden.json().items() if k != "detail"} == {
        k: v for k, v in missing.json().items() if k != "detail"}
    assert "hello" not in hidden.text
    assert bob.post("/threads/t-private/turns", {"text": "sneaking in"}).status == 404
    turns = as_("alice").get("/threads/t-private/turns").json()["items"]
    assert [t["text"] for t in turns] == ["hello"]


def _snapshot(rt: Runtime) -> set[tuple[str, str, int]]:
    return {(r.pk, r.sk, r.version) for r in rt.store.scan("c#acme#")}


# Every write route, each naming a scope outside bob's write region (org/acme/user/bob).
OUTSIDE = [["org/acme/user/alice"]]
WRITE_ROUTES = {
    "POST /sessions": ("POST", "/sessions", {"scopes": OUTSIDE}),
    "POST /facts": ("POST", "/facts", {"text": "I live in Rome.", "scopes": OUTSIDE}),
    "POST /facts (mixed clause)": ("POST", "/facts", {"text": "I live in Rome.",
                                                      "scopes": [["org/acme/user/bob", "org/acme/shared"]]}),
    "POST /facts/batch": ("POST", "/facts/batch", {"messages": [{"role": "user", "content": "I live in Rome."}],
                                                   "scopes": OUTSIDE}),
    "POST /chat": ("POST", "/chat", {"message": "I live in Rome.", "scopes": OUTSIDE}),
    "POST /documents": ("POST", "/documents", {"title": "Notes", "text": "# Rome\n\nI live in Rome.",
                                               "scopes": OUTSIDE}),
}


@pytest.mark.parametrize("route", sorted(WRITE_ROUTES))
def test_every_write_route_outside_the_region_is_403_and_writes_nothing(as_, runtime, route):
    method, path, body = WRITE_ROUTES[route]
    assert write(as_("alice"), "I live in London.").status == 200
    before = _snapshot(runtime)
    r = as_("bob").request(method, path, body)
    assert r.status == 403, r.text
    assert r.json()["code"] == "scope_outside_write_region"
    assert r.json()["scope"] in {"org/acme/user/alice", "org/acme/shared"}
    assert _snapshot(runtime) == before


def test_writes_into_an_existing_container_outside_the_region_are_403(as_, runtime):
    """A session alice and bob can both read (org/acme/shared) but only an unrestricted key
    may write: bob cannot close it or chat into it (its turns take its scopes)."""
    shared = as_("admin").post("/sessions", {"scopes": [["org/acme/shared"]]})
    assert shared.status == 201
    sid = shared.json()["id"]
    assert as_("bob").get(f"/sessions/{sid}/turns").status == 200  # readable
    before = _snapshot(runtime)
    r = as_("bob").post(f"/sessions/{sid}/close")
    assert r.status == 403 and r.json()["scope"] == "org/acme/shared"
    r = as_("bob").post("/chat", {"message": "I live in Rome.", "sessionId": sid})
    assert r.status == 403 and r.json()["scope"] == "org/acme/shared"
    assert _snapshot(runtime) == before
    # An uncertainty bob can read but not write: resolving it (which writes the uncertainty
    # and the accepted fact under its scopes) is 403 and writes nothing.
    assert write(as_("admin"), "I think I live in Paris.", scopes=[["org/acme/shared"]]).status == 200
    items = as_("bob").get("/uncertainty").json()["items"]
    assert items, "bob reads the shared uncertainty"
    before = _snapshot(runtime)
    r = as_("bob").post(f"/uncertainty/{items[0]['id']}/resolve", {"acceptedValue": "Paris"})
    assert r.status == 403 and r.json()["scope"] == "org/acme/shared"
    assert _snapshot(runtime) == before


def test_inside_the_region_every_write_route_succeeds(as_):
    bob = as_("bob")
    inside = [["org/acme/user/bob"]]
    assert bob.post("/sessions", {"scopes": inside}).status == 201
    assert bob.post("/facts", {"text": "I live in Rome.", "scopes": inside}).status == 200
    assert bob.post("/facts/batch", {"messages": [{"role": "user", "content": "I like tea."}]}).status == 200
    assert bob.post("/chat", {"message": "I like jazz."}).status == 200
    assert bob.post("/documents", {"title": "N", "text": "# A\n\nB."}).status in (201, 202)


def test_containers_outside_the_read_region_answer_like_missing_ones(as_):
    """Sessions, documents (and their chunks) and traces alice cannot read are 404, as if
    they did not exist; deleting them is 404 too (forget removes only what it can read)."""
    sid = as_("alice").post("/sessions", {}).json()["id"]
    doc = as_("alice").post("/documents", {"title": "Diary", "text": "# Day\n\nI live in London."})
    assert doc.status in (201, 202), doc.text
    did = doc.json()["id"]
    chat = as_("alice").post("/chat", {"message": "I live in London."})
    assert chat.status == 200, chat.text
    tid = chat.json()["traceId"]
    bob = as_("bob")
    for path in (f"/sessions/{sid}/turns", f"/documents/{did}", f"/documents/{did}/chunks",
                 f"/traces/{tid}"):
        assert bob.get(path).status == 404, path
        assert as_("alice").get(path).status == 200, path
    assert bob.request("DELETE", f"/documents/{did}").status == 404
    assert bob.request("DELETE", f"/sessions/{sid}").status == 404
    assert as_("alice").get(f"/documents/{did}").status == 200
    # support on behalf of alice: the intersection covers alice's area, so it reads them;
    # on behalf of bob it does not.
    assert as_("support", on_behalf_of="alice").get(f"/sessions/{sid}/turns").status == 200
    assert as_("support", on_behalf_of="bob").get(f"/sessions/{sid}/turns").status == 404
    assert as_("support", on_behalf_of="bob").get(f"/traces/{tid}").status == 404


def test_inspect_and_traces_obey_the_read_region_and_the_principal(as_):
    triple = {"entity": {"type": "person", "name": "Dana"}, "key": "city", "value": "Lisbon"}
    assert as_("alice").post("/facts", {"text": "Dana lives in Lisbon.", "infer": "triples",
                                        "triples": [triple]}).status == 200
    assert as_("bob").post("/facts", {"text": "Dana lives in Porto.", "infer": "triples",
                                      "triples": [{**triple, "value": "Porto"}]}).status == 200
    for who, mine, theirs in (("alice", "Lisbon", "Porto"), ("bob", "Porto", "Lisbon")):
        seen = as_(who).get("/inspect?ref=attribute:person/dana/city")
        text = seen.text if seen.status == 200 else ""
        assert theirs not in text, (who, seen.text)  # neither the value nor its history
        if seen.status == 200:  # bob may get 404: the entity record is in the region of its first writer
            assert mine in text
        else:
            assert (who, seen.status) == ("bob", 404), seen.text
    chat = as_("alice").post("/chat", {"message": "Where does Dana live?", "bypassCache": True})
    assert chat.status == 200, chat.text
    trace = chat.json()["traceId"]
    assert [t["id"] for t in as_("alice").get("/traces").json()["traces"]] == [trace]
    assert as_("bob").get("/traces").json()["traces"] == []  # another principal's trace
    assert as_("bob").get("/traces/stats").json()["totalQueries"] == 0
    assert as_("bob").get(f"/inspect?ref=trace:{trace}").status == 404
    assert as_("alice").get(f"/inspect?ref=trace:{trace}").json()["trace"]["id"] == trace
    assert trace in [t["id"] for t in as_("admin").get("/traces").json()["traces"]]  # an admin sees all
    # support for alice: alice's traces, as the intersection of the regions covers hers
    assert [t["id"] for t in as_("support", on_behalf_of="alice").get("/traces").json()["traces"]] == [trace]
    assert as_("support").get("/traces").json()["traces"] == []  # support's own: none
