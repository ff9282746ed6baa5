"""Administration over HTTP on both record stores (in process): who am I, keys minted,
listed, rotated, expired and deleted, principals' versioned grants, and every escalation
attempt answering 403 with nothing changed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from agent_memory.kernel import timeutil
from tests.support.callers import As

KEYS = {"ops": "key-ops-000000000000", "lead": "key-lead-00000000000", "alice": "key-alice-0000000000",
        "bob": "key-bob-000000000000", "support": "key-support-00000000"}
PRINCIPALS = [
    {"key": KEYS["ops"], "principal": "ops", "admin": True},
    {"key": KEYS["lead"], "principal": "lead", "contexts": ["acme"],
     "verbs": ["memory:read", "memory:write", "grant:manage"],
     "read_region": ["org/acme"], "write_region": ["org/acme/team"]},
    {"key": KEYS["alice"], "principal": "alice", "contexts": ["acme"], "read_region": ["org/acme/user/alice"],
     "write_region": ["org/acme/user/alice"]},
    {"key": KEYS["bob"], "principal": "bob", "contexts": ["acme"], "verbs": ["memory:read", "grant:manage"],
     "read_region": ["org/acme/user/bob"]},
    {"key": KEYS["support"], "principal": "support", "contexts": ["acme"], "verbs": ["memory:read", "delegate"],
     "read_region": ["org/acme/user"]},
]


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


@pytest.fixture
def as_(api: Any):
    def caller(who: str, **kw: Any) -> As:
        return As(api, KEYS.get(who, who), **kw)
    return caller


def keys_of(caller: As) -> list[dict[str, Any]]:
    r = caller.get("/keys")
    assert r.status == 200, r.text
    return r.json()


def test_whoami_names_the_caller_its_grants_and_the_delegation(as_):
    me = as_("alice").get("/me").json()
    assert me["principalId"] == "alice" and me["kind"] == "key" and me["enforce"] is True
    assert me["effectiveGrants"]["memory:read"] == ["org/acme/user/alice"]
    assert set(me["effectiveGrants"]) == {"memory:read", "memory:write", "memory:forget"}
    assert me["delegatedPrincipalId"] is None
    delegated = as_("support", on_behalf_of="alice").get("/me").json()
    assert delegated["principalId"] == "support" and delegated["delegatedPrincipalId"] == "alice"
    assert delegated["effectiveGrants"] == {"memory:read": ["org/acme/user/alice"]}  # the intersection
    assert as_("ops").get("/me").json()["effectiveGrants"]["admin"] == ["/"]
    assert as_("nobody").get("/me").status == 401


def test_a_minted_key_works_bound_to_its_context_and_is_listed_without_its_secret(as_):
    r = as_("lead").post("/keys?ttlSeconds=3600", {"name": "ci", "grants": {"memory:read": ["org/acme/team"]}})
    assert r.status == 201, r.text
    minted = r.json()
    assert minted["name"] == "ci" and minted["validUntil"] is not None
    new = as_(minted["key"])
    me = new.get("/me").json()
    assert me["principalId"] == "lead" and me["effectiveGrants"] == {"memory:read": ["org/acme/team"]}
    assert new.post("/facts", {"text": "I live in Rome."}).status == 403  # read only
    assert as_(minted["key"], context="/api/v1/other").get("/state").status == 403  # bound to acme
    listed = keys_of(as_("lead"))
    assert [k["name"] for k in listed] == ["ci"] and minted["key"] not in str(listed)
    assert listed[0]["contexts"] == ["acme"] and listed[0]["grants"] == {"memory:read": ["org/acme/team"]}
    assert as_("lead").post("/keys", {"name": "ci"}).status == 409


def test_keys_stop_working_at_expiry(as_, monkeypatch):
    minted = as_("lead").post("/keys?ttlSeconds=60", {"name": "short"}).json()
    assert as_(minted["key"]).get("/me").status == 200
    later = timeutil.now() + timedelta(seconds=61)
    monkeypatch.setattr(timeutil, "now", lambda: later)
    assert as_(minted["key"]).get("/me").status == 401
    assert keys_of(as_("lead")) == []


def test_rotate_retires_the_old_secret_and_delete_removes_the_key(as_):
    minted = as_("lead").post("/keys", {"name": "svc"}).json()
    r = as_("lead").post("/keys/svc/rotate")
    assert r.status == 200, r.text
    rotated = r.json()
    assert rotated["key"] != minted["key"] and rotated["name"] == "svc"
    assert as_(minted["key"]).get("/me").status == 401
    assert as_(rotated["key"]).get("/me").json()["principalId"] == "lead"
    overlapped = as_("lead").post("/keys/svc/rotate?overlapSeconds=300").json()
    assert as_(rotated["key"]).get("/me").status == 200  # still inside its overlap window
    listed = {k["name"]: k for k in keys_of(as_("lead"))}
    retiring = [k for name, k in listed.items() if name != "svc"]  # listed under its id until it ends
    assert "svc" in listed and len(retiring) == 1 and retiring[0]["validUntil"] is not None
    assert as_("lead").request("DELETE", "/keys/svc").status == 204
    assert as_(overlapped["key"]).get("/me").status == 401
    assert as_("lead").request("DELETE", "/keys/svc").status == 404


def test_escalations_answer_403_and_change_nothing(as_, api):
    before_keys = keys_of(as_("ops"))
    # minting a wider key: more region, another verb, admin
    for grants in ({"memory:read": ["/"]}, {"memory:write": ["org/acme/other"]}, {"memory:forget": ["/"]},
                   {"admin": ["/"]}):
        r = as_("lead").post("/keys", {"grants": grants})
        assert r.status == 403 and r.json()["code"] == "beyond_authority", (grants, r.text)
    assert as_("lead").post("/keys", {"contexts": ["other"]}).status == 403  # admins only
    # granting oneself admin, or anyone what one does not hold
    for who, change in (("lead", {"path": "/", "verbs": ["admin"]}),
                        ("alice", {"path": "org/acme/user/bob", "verbs": ["memory:write"]}),
                        ("bob", {"path": "/", "verbs": ["memory:forget"]})):
        r = as_("lead").post(f"/principals/{who}/grants", change)
        assert r.status == 403 and r.json()["code"] == "beyond_authority", (who, change, r.text)
    # a key without grant:manage cannot mint or grant at all
    assert as_("alice").post("/keys", {}).status == 403
    assert as_("alice").post("/principals/alice/grants", {"path": "/", "verbs": ["memory:read"]}).status == 403
    # rotating or deleting another principal's key
    theirs = as_("bob").post("/keys", {"name": "bobs"})
    assert theirs.status == 201, theirs.text
    r = as_("lead").post("/keys/bobs/rotate")
    assert r.status == 403 and r.json()["code"] == "not_your_key"
    assert as_("lead").request("DELETE", "/keys/bobs").status == 403
    assert as_(theirs.json()["key"]).get("/me").status == 200
    # no key is managed on another principal's behalf
    assert as_("support", on_behalf_of="alice").post("/keys", {}).status == 403
    # delegating to a principal one may not act for (it reads more; an admin)
    assert as_("support", on_behalf_of="lead").get("/state").json()["code"] == "delegation_beyond_authority"
    assert as_("support", on_behalf_of="ops").get("/state").status == 403
    after = keys_of(as_("ops"))
    assert [k["name"] for k in after] == [k["name"] for k in before_keys] + ["bobs"]
    assert as_("lead").get("/principals/alice").json()["grants"]["memory:read"] == ["org/acme/user/alice"]


def test_grants_are_versioned_and_bound_the_principals_keys(as_):
    minted = as_("lead").post("/keys", {"name": "wide", "grants": {"memory:read": ["org/acme"],
                                                                   "memory:write": ["org/acme/team"]}}).json()
    assert as_("ops").get("/principals/lead").json()["grants"]["memory:read"] == ["org/acme"]
    before = timeutil.iso(timeutil.now() - timedelta(milliseconds=1))  # before the first version
    r = as_("ops").request("DELETE", "/principals/lead/grants", {"path": "org/acme", "verbs": ["memory:read"]})
    assert r.status == 200, r.text
    assert "memory:read" not in r.json()["grants"]
    # the change bounds every key of the principal at once (this process's key cache is cleared)
    assert "memory:read" not in as_(minted["key"]).get("/me").json()["effectiveGrants"]
    now = as_("ops").get("/principals/lead/effective?path=org/acme/team").json()
    assert "memory:read" not in now["verbs"] and "memory:write" in now["verbs"]
    past = as_("ops").get(f"/principals/lead/effective?path=org/acme/team&asOf={before}").json()
    assert "memory:read" in past["verbs"] and past["asOf"] == before
    r = as_("ops").post("/principals/lead/grants", {"path": "org/acme/team", "verbs": ["memory:read"]})
    assert r.json()["grants"]["memory:read"] == ["org/acme/team"]
    assert as_(minted["key"]).get("/me").json()["effectiveGrants"]["memory:read"] == ["org/acme/team"]
    listed = {p["id"]: p for p in as_("ops").get("/principals").json()}
    assert {"lead", "ops", "alice", "bob", "support"} <= set(listed)
    assert listed["lead"]["grants"]["memory:read"] == ["org/acme/team"]
    assert as_("ops").get("/principals/nobody").status == 404
    assert as_("ops").post("/principals/lead/grants", {"path": "org/acme", "verbs": ["delegate"]}).status == 400


def test_scopes_registry_and_forgetting_a_subtree(as_, api):
    r = as_("alice").post("/scopes", {"path": "org/acme/user/alice", "displayName": "Alice", "description": "hers"})
    assert r.status == 201, r.text
    assert as_("alice").post("/scopes", {"path": "org/acme/user/alice/notes"}).status == 201
    assert as_("alice").post("/scopes", {"path": "org/acme/user/bob"}).status == 403  # outside her write region
    assert as_("alice").post("/scopes", {"path": "org/acme/*"}).status == 400
    assert as_("ops").post("/scopes", {"path": "org/acme/user/bob"}).status == 201
    assert [n["path"] for n in as_("alice").get("/scopes").json()] == ["org/acme/user/alice",
                                                                      "org/acme/user/alice/notes"]
    assert as_("alice").request("DELETE", "/scopes?path=org/acme/user/alice/notes").status == 204
    listed = {n["path"]: n for n in as_("ops").get("/scopes").json()}
    assert listed["org/acme/user/alice/notes"]["tombstonedAt"] and listed["org/acme/user/alice"]["displayName"] == "Alice"
    assert as_("alice").request("DELETE", "/scopes?path=org/acme/user/bob").status == 404  # not hers to see

    assert as_("alice").post("/facts", {"text": "I live in London."}).status == 200  # her default scope
    assert as_("alice").post("/facts", {"text": "I work at Initech.",
                                        "scopes": [["org/acme/user/alice/notes"]]}).status == 200
    assert as_("ops").post("/facts", {"text": "I live in Rome.", "scopes": [["org/acme/user/bob"]]}).status == 200
    session = as_("alice").post("/sessions", {}).json()

    def values(who: str) -> set[str]:
        state = as_(who).get("/state").json()
        return {a["value"] for c in ("identity", "knowledge", "context") for a in state[c]["attributes"]}

    assert {"London", "Initech"} <= values("alice")
    before = as_("ops").post("/query", {"query": "London Initech", "k": 20, "mode": "bm25"}).json()["hits"]
    assert [h for h in before if "London" in str(h)]
    assert as_("alice").post("/scopes/forget", {"path": "org/acme/user/bob"}).status == 403
    r = as_("alice").post("/scopes/forget", {"path": "org/acme/user/alice"})
    assert r.status == 200, r.text
    assert r.json()["forgotten"] >= 3  # two facts at least, and the session
    assert not {"London", "Initech"} & values("ops") and "Rome" in values("ops")
    assert as_("alice").get(f"/sessions/{session['id']}/turns").status == 404
    hits = as_("ops").post("/query", {"query": "London Initech", "k": 20, "mode": "bm25"}).json()["hits"]
    assert hits is not None and not [h for h in hits if "London" in str(h) or "Initech" in str(h)]  # units too
    assert as_("alice").post("/scopes/forget", {"path": "org/acme/user/alice"}).json()["forgotten"] == 0


def test_a_key_the_operator_makes_later_is_bounded_by_the_principals_grants_too(as_, runtime):
    r = as_("ops").request("DELETE", "/principals/carol/grants", {"path": "/", "verbs": ["memory:write"]})
    assert r.status == 200, r.text  # carol has no key yet: her record starts empty
    assert as_("ops").post("/principals/carol/grants", {"path": "org/acme/c", "verbs": ["memory:read"]}).status == 200
    raw, _ = runtime.administration.operator_create_key("carol")  # `agent-memory keys create`: unbound, default verbs
    me = as_(raw).get("/me").json()
    assert me["effectiveGrants"] == {"memory:read": ["org/acme/c"]}
    assert me["tokenGrants"] == {"memory:forget": ["/"], "memory:read": ["/"], "memory:write": ["/"]}
    assert as_(raw, context="/api/v1/other").get("/me").json()["effectiveGrants"] == me["tokenGrants"]


def test_an_admin_binds_a_key_to_more_contexts_and_lists_every_principals_keys(as_):
    minted = as_("ops").post("/keys", {"name": "both", "contexts": ["other"]}).json()
    assert as_(minted["key"]).get("/me").status == 200
    assert as_(minted["key"], context="/api/v1/other").get("/me").status == 200
    assert as_(minted["key"], context="/api/v1/third").get("/me").status == 403
    assert as_("lead").post("/keys", {"name": "mine"}).status == 201
    assert [k["name"] for k in keys_of(as_("lead"))] == ["mine"]  # only its own
    assert {"both", "mine"} <= {k["name"] for k in keys_of(as_("ops"))}
    assert as_("ops").request("DELETE", "/keys/mine").status == 204  # an admin may


def test_forgetting_a_scope_past_the_deadline_removes_nothing(as_, monkeypatch):
    from agent_memory.kernel import deadline

    assert as_("alice").post("/facts", {"text": "I live in London."}).status == 200
    monkeypatch.setattr(deadline, "expired", lambda: True)
    r = as_("alice").post("/scopes/forget", {"path": "org/acme/user/alice"})
    assert r.status == 503 and "finding the scope's records" in r.json()["detail"], r.text
    monkeypatch.undo()
    state = as_("alice").get("/state").json()
    assert "London" in str(state)
