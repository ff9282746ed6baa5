"""The administration routes (keys, principals, grants) turned against themselves: each
escalation of issue 60, tried with stored keys of different grants, regions and expiries on
both record stores, in process and through the local server (``any_api``). Each answers 4xx and
changes nothing; none opens the service.

Keys here are stored keys (``agent-memory keys create``), stored before the service's first
request: the service "finds them when it starts", so keys are required from then on."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from agent_memory.kernel import timeutil
from tests.support.callers import As


@pytest.fixture
def keys(runtime: Any) -> dict[str, str]:
    """Keys stored before the service starts: ``root`` (admin), ``lead`` (grant:manage and
    read/write under org/acme), ``bob`` (grant:manage reading org/acme/user/bob), ``short``
    (lead's principal, five minutes), ``mgr`` (grant:manage and read on the whole context)."""
    admin = runtime.administration
    made = {}
    made["root"], _ = admin.operator_create_key("root", admin=True, name="root")
    made["lead"], _ = admin.operator_create_key("lead", name="lead", contexts=["acme"],
                                                verbs=["memory:read", "memory:write", "grant:manage"],
                                                read_region=["org/acme"], write_region=["org/acme"])
    made["bob"], _ = admin.operator_create_key("bob", name="bob", contexts=["acme"],
                                               verbs=["memory:read", "grant:manage"],
                                               read_region=["org/acme/user/bob"])
    made["short"], _ = admin.operator_create_key("lead", name="short", contexts=["acme"], ttl_seconds=300,
                                                 verbs=["memory:read", "grant:manage"], read_region=["org/acme"])
    made["mgr"], _ = admin.operator_create_key("mgr", name="mgr", contexts=["acme"],
                                               verbs=["memory:read", "grant:manage"])
    return made


@pytest.fixture
def as_(any_api: Any, keys: dict[str, str]):
    def caller(who: str | None, **kw: Any) -> As:
        return As(any_api, keys.get(who, who) if who is not None else None, **kw)
    return caller


def key_names(caller: As) -> list[str]:
    r = caller.get("/keys")
    assert r.status == 200, r.text
    return sorted(k["name"] for k in r.json())


# --- 1, 2: keys required is a start-up decision ----------------------------------------------


def test_deleting_every_key_does_not_open_the_service(as_, runtime):
    """Escalation 1: a narrow grant:manage key deleted the admin key and itself, and the
    anonymous caller became the local admin."""
    narrow = as_("root").post("/keys", {"name": "narrow", "grants": {"grant:manage": ["/"]}})
    assert narrow.status == 201, narrow.text
    narrow_caller = As(as_("root").api, narrow.json()["key"])
    assert narrow_caller.request("DELETE", "/keys/root").status == 403  # not its to delete (see below)
    assert as_("root").request("DELETE", "/keys/narrow").status == 204
    for name in ("lead", "short", "bob", "mgr", "root"):
        assert as_("root").request("DELETE", f"/keys/{name}").status == 204, name
    assert runtime.api_keys.list() == []
    anonymous = as_(None)
    assert anonymous.get("/me").status == 401
    assert anonymous.post("/keys", {"name": "mine"}).status == 401
    assert runtime.api_keys.list() == []


def test_a_key_stored_while_the_service_runs_open_does_not_close_it(any_api, runtime):
    """Escalation 2, the other direction: on a service started open, minting over HTTP is a
    409 that says how to start with keys required; a key the operator stores meanwhile does
    not close the running service either."""
    anonymous = As(any_api, None)
    me = anonymous.get("/me").json()
    assert me["enforce"] is False and me["kind"] == "local"
    refused = anonymous.post("/keys", {"name": "ci"})
    assert refused.status == 409 and refused.json()["code"] == "keys_not_required"
    assert "AGENT_MEMORY_REQUIRE_KEYS" in refused.json()["detail"] and "keys create" in refused.json()["detail"]
    assert runtime.api_keys.list() == []
    runtime.administration.operator_create_key("ops", admin=True)
    assert anonymous.get("/me").status == 200  # open until restarted


@pytest.mark.parametrize("require_keys_setting", [True])
def test_require_keys_setting_requires_keys_with_none_stored(any_api, runtime):
    anonymous = As(any_api, None)
    assert anonymous.get("/me").status == 401
    assert anonymous.post("/keys", {}).status == 401
    assert runtime.authenticator.mode() == (True, "AGENT_MEMORY_REQUIRE_KEYS is set")
    key, _ = runtime.administration.operator_create_key("ops", admin=True)
    assert As(any_api, key).get("/me").json()["enforce"] is True


# --- 3, 4: no key outranks its maker or its principal --------------------------------------


def test_a_narrow_key_cannot_rotate_or_delete_a_wider_key_of_its_principal(as_):
    """Escalation 3: rotation checked the caller's authority, deletion did not."""
    minted = as_("lead").post("/keys", {"name": "narrow", "grants": {"memory:read": ["org/acme/team"],
                                                                     "grant:manage": ["/"]}})
    assert minted.status == 201, minted.text
    narrow = As(as_("lead").api, minted.json()["key"])
    assert sorted(k["name"] for k in narrow.get("/keys").json()) == ["lead", "narrow", "short"]
    for method, path in (("DELETE", "/keys/lead"), ("POST", "/keys/lead/rotate")):
        r = narrow.request(method, path)
        assert r.status == 403 and r.json()["code"] == "beyond_authority", (method, r.text)
    assert key_names(as_("lead")) == ["lead", "narrow", "short"]
    assert narrow.request("DELETE", "/keys/narrow").status == 204  # its own: yes
    assert as_("root").request("DELETE", "/keys/lead").status == 204  # an admin: any


def test_a_key_never_outlives_the_key_that_mints_or_rotates_it(as_):
    """Escalation 4: a key valid for 300 s minted a key without expiry, or rotated itself to
    ten years."""
    short_until = [k for k in as_("short").get("/keys").json() if k["name"] == "short"][0]["validUntil"]
    assert short_until is not None
    for ttl in ("", "?ttlSeconds=315360000"):
        minted = as_("short").post(f"/keys{ttl}", {"name": f"child{len(ttl)}", "grants": {"memory:read": ["org/acme"]}})
        assert minted.status == 201, minted.text
        assert minted.json()["validUntil"] == short_until
    rotated = as_("short").post("/keys/short/rotate?ttlSeconds=315360000")
    assert rotated.status == 200 and rotated.json()["validUntil"] <= short_until
    # a key that outlives it is beyond it: the short key may not delete lead's key without expiry
    fresh = As(as_("short").api, rotated.json()["key"])
    assert fresh.request("DELETE", "/keys/lead").status == 403
    far = timeutil.iso(timeutil.now() + timedelta(days=3650))
    assert all(k["validUntil"] is None or k["validUntil"] < far for k in as_("root").get("/keys").json()
               if k["principal"] == "lead" and k["name"] != "lead")


# --- 5, 6: admins cannot be locked out; listings stay inside the read region ---------------


def test_a_grant_manager_cannot_strip_an_admin_and_the_last_admin_keeps_admin(as_, runtime):
    """Escalation 5: a grant:manage principal revoked an admin's read at '/', and the admin
    could not grant itself back."""
    before = as_("root").get("/principals/root").json()
    for method, change in (("DELETE", {"path": "/", "verbs": ["memory:read"]}),
                           ("DELETE", {"path": "/", "verbs": ["admin"]}),
                           ("POST", {"path": "/", "verbs": ["memory:read"]})):
        r = as_("mgr").request(method, "/principals/root/grants", change)
        assert r.status == 403 and r.json()["code"] == "beyond_authority", (method, change, r.text)
    assert as_("root").get("/principals/root").json() == before
    assert as_("root").get("/state").status == 200
    # a principal whose grants reach past the caller's: lead writes org/acme, mgr writes nothing
    r = as_("mgr").request("DELETE", "/principals/lead/grants", {"path": "org/acme", "verbs": ["memory:read"]})
    assert r.status == 403 and r.json()["code"] == "beyond_authority"
    # the last admin cannot lose admin, even by its own hand; with a second admin, it can
    r = as_("root").request("DELETE", "/principals/root/grants", {"path": "/", "verbs": ["admin"]})
    assert r.status == 409 and r.json()["code"] == "last_admin"
    runtime.administration.operator_create_key("root2", admin=True, name="root2")
    r = as_("root").request("DELETE", "/principals/root2/grants", {"path": "/", "verbs": ["admin"]})
    assert r.status == 200 and "admin" not in r.json()["grants"]
    assert as_("root").request("DELETE", "/principals/root/grants", {"path": "/", "verbs": ["admin"]}).status == 409
    assert as_("root").get("/me").json()["effectiveGrants"]["admin"] == ["/"]


def test_principal_listings_stay_inside_the_callers_read_region(as_):
    """Escalation 6: a grant:manage holder saw every principal's grants and regions."""
    assert [p["id"] for p in as_("bob").get("/principals").json()] == ["bob"]
    for path in ("/principals/lead", "/principals/root", "/principals/lead/effective?path=org/acme"):
        assert as_("bob").get(path).status == 404, path
    assert as_("bob").get("/principals/bob/effective?path=org/acme/user/bob/x").json()["verbs"] == [
        "grant:manage", "memory:read"]
    # lead reads org/acme: it sees bob (inside), not root (an admin) nor mgr (the whole context)
    assert [p["id"] for p in as_("lead").get("/principals").json()] == ["bob", "lead"]
    assert [p["id"] for p in as_("root").get("/principals").json()] == ["bob", "lead", "mgr", "root"]
    assert [p["id"] for p in as_("mgr").get("/principals").json()] == ["bob", "lead", "mgr", "root"]


# --- 9 and the client's gaps: delegation, effective, read routes, /contexts, forwarded hosts --


def test_delegation_reaches_a_principal_known_only_by_its_grants(as_):
    """A principal made with principals.grant (no key) was an unknown delegation target."""
    assert as_("root").post("/principals/reader/grants", {"path": "org/acme", "verbs": ["memory:read"]}).status == 200
    me = as_("root", on_behalf_of="reader").get("/me")
    assert me.status == 200, me.text
    assert me.json()["delegatedPrincipalId"] == "reader"
    assert me.json()["effectiveGrants"] == {"memory:read": ["org/acme"]}
    assert as_("root", on_behalf_of="reader").post("/facts", {"text": "I live in Oslo."}).status == 403
    assert as_("root", on_behalf_of="nobody").get("/me").json()["code"] == "unknown_delegation_target"


def test_delegation_and_effective_on_a_service_started_open(any_api, runtime):
    """The client README's steps on the local service without keys: grant, effective for the
    prefix a wildcard grant covers, and a call on behalf of the granted principal."""
    local = As(any_api, None)
    assert local.post("/principals/team/grants", {"path": "org/acme/*", "verbs": ["memory:read"]}).status == 200
    r = local.get("/principals/team/effective?path=org/acme/")
    assert r.status == 200 and r.json()["verbs"] == ["memory:read"], r.text
    assert local.get("/principals/team/effective?path=org/acme/team").json()["verbs"] == ["memory:read"]
    assert local.get("/principals/team/effective?path=org/acme").json()["verbs"] == []  # itself: not granted
    assert local.get("/principals/team/effective?path=org/other/").json()["verbs"] == []
    me = As(any_api, None, on_behalf_of="team").get("/me")
    assert me.status == 200 and me.json()["effectiveGrants"] == {"memory:read": ["org/acme/*"]}, me.text
    assert me.json()["kind"] == "local" and me.json()["delegatedPrincipalId"] == "team"
    assert As(any_api, None, on_behalf_of="ghost").get("/me").status == 403


def test_keyword_search_is_a_read_and_contexts_follow_the_principals_grants(as_, runtime):
    reader, _ = runtime.administration.operator_create_key("viewer", contexts=["acme"], verbs=["memory:read"])
    found = As(as_("root").api, reader).post("/documents/keywords/search", {"query": "refund policy"})
    assert found.status == 200, found.text
    lead = As(as_("root").api, as_("lead").headers["authorization"][7:], context="")
    assert [c["contextId"] for c in lead.get("/api/v1/contexts").json()["items"]] == ["acme"]
    r = as_("root").request("DELETE", "/principals/lead/grants", {"path": "org/acme", "verbs": ["memory:read"]})
    assert r.status == 200 and "memory:read" not in r.json()["grants"]
    assert lead.get("/api/v1/contexts").json()["items"] == []


def test_forwarded_hosts_count_only_when_trusted(as_):
    r = as_("root").post("/documents/uploads", {"size": 5, "title": "t"},
                         headers={"x-forwarded-host": "evil.example", "x-forwarded-proto": "https"})
    assert r.status == 201, r.text
    assert "evil.example" not in r.json()["uploadUrl"]


# --- 7: threads under read regions ------------------------------------------------------------


def test_threads_are_read_under_read_regions(any_api, runtime):
    """Escalation 7: a key reading org/acme/user/bob read a thread of alice's that had no
    reader list; only reader lists guarded threads."""
    made = {}
    for who in ("alice", "bob"):
        made[who], _ = runtime.administration.operator_create_key(
            who, contexts=["acme"], read_region=[f"org/acme/user/{who}"], write_region=[f"org/acme/user/{who}"],
            default_write_scope=f"org/acme/user/{who}")
    made["ops"], _ = runtime.administration.operator_create_key("ops", admin=True)
    alice, bob, ops = (As(any_api, made[w]) for w in ("alice", "bob", "ops"))
    assert alice.post("/threads/t-alice/turns", {"text": "My salary is 90k."}).status in (200, 201)
    assert alice.get("/threads/t-alice/turns").json()["items"][0]["text"] == "My salary is 90k."
    for method, path, body in (("GET", "/threads/t-alice", None), ("GET", "/threads/t-alice/turns", None),
                               ("GET", "/threads/t-alice/turns/1", None),
                               ("POST", "/threads/t-alice/context", {"query": "salary"}),
                               ("POST", "/threads/t-alice/turns", {"text": "mine now"})):
        r = bob.request(method, path, body)
        assert r.status == 404, (method, path, r.status, r.text)
    assert [t["text"] for t in ops.get("/threads/t-alice/turns").json()["items"]] == ["My salary is 90k."]
    # bob's own turn in a thread he may read lies in his scope, and alice does not read it
    assert bob.post("/threads/t-bob/turns", {"text": "I like tea."}).status in (200, 201)
    assert alice.get("/threads/t-bob/turns").status == 404
    # a thread an unrestricted writer made without scopes is unscoped: every reader reads it
    assert ops.post("/threads/t-open/turns", {"text": "Office opens at nine."}).status in (200, 201)
    assert [t["text"] for t in bob.get("/threads/t-open/turns").json()["items"]] == ["Office opens at nine."]
