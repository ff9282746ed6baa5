"""Reader lists: omitted (tenant-visible), non-empty (principals / groups, audited admin
bypass), empty (admin-only quarantine); the thread list as default; denied content never
returned by list, single-turn read, context or semantic search; 401 and 403."""

from __future__ import annotations

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.runtime import get_runtime

T = "/threads/care-log"


def audit_records() -> list[dict]:
    ctx = RequestContext(context_id="acme", principal="t", admin=True)
    return [r.data for r in get_runtime().store.query(keys.audit_pk(ctx), limit=1000).records]


def listed(api, path=T) -> list[int]:
    r = api.get(f"{path}/turns")
    assert r.status == 200, r.text
    return [t["turnIndex"] for t in r.json()["items"]]


def context_indexes(api, query, n, path=T) -> dict[str, list[int]]:
    r = api.post(f"{path}/context", {"query": query, "last_n_turns": n})
    assert r.status == 200, r.text
    out: dict[str, list[int]] = {"recent": [], "semantic": []}
    for item in r.json()["items"]:
        out[item["origin"]].append(item["turnIndex"])
    return out


def seed(as_):
    """1 open, 2 care-team group, 3 alice only, 4 quarantined, 5..8 open filler."""
    admin = as_("admin")
    admin.post(f"{T}/turns", {"text": "open note: the clinic moved to the new building"})
    admin.post(f"{T}/turns", {"text": "care team note: the breathing exercise helped with anxiety",
                              "acl_readers": ["group:care-team-7"]})
    admin.post(f"{T}/turns", {"text": "alice private note: anxiety about the breathing exam",
                              "acl_readers": ["alice"]})
    admin.post(f"{T}/turns", {"text": "quarantined note: breathing anxiety incident report", "acl_readers": []})
    for i in range(4):
        admin.post(f"{T}/turns", {"text": f"open filler {i}"})


def test_three_reader_list_states_on_every_read_path(as_):
    seed(as_)
    care, alice, bob = as_("care"), as_("alice"), as_("bob")
    assert listed(care) == [1, 2, 5, 6, 7, 8]
    assert listed(as_("nurse")) == [1, 2, 5, 6, 7, 8]  # group given as "group:care-team-7" in config
    assert listed(alice) == [1, 3, 5, 6, 7, 8]
    assert listed(bob) == [1, 5, 6, 7, 8]  # indexes are never renumbered: gaps show
    for who, denied in ((care, (3, 4)), (alice, (2, 4)), (bob, (2, 3, 4))):
        for index in denied:
            assert who.get(f"{T}/turns/{index}").status == 404
    # semantic search filters readers inside the search: "breathing anxiety" matches 2, 3 and 4
    q = "breathing exercise anxiety"
    assert set(context_indexes(care, q, 4)["semantic"]) & {3, 4} == set()
    assert 2 in context_indexes(care, q, 4)["semantic"]
    assert set(context_indexes(alice, q, 4)["semantic"]) & {2, 4} == set()
    assert 3 in context_indexes(alice, q, 4)["semantic"]
    assert set(context_indexes(bob, q, 4)["semantic"]) & {2, 3, 4} == set()
    # in the recent window too
    assert context_indexes(bob, q, 6)["recent"] == [5, 6, 7, 8]
    assert context_indexes(care, q, 6)["recent"] == [5, 6, 7, 8] and context_indexes(care, q, 7)["recent"] == [
        2, 5, 6, 7, 8]
    # no text of a denied turn appears anywhere in bob's responses
    for path in (f"{T}/turns", f"{T}/turns?limit=1&after_index=1"):
        assert "breathing" not in bob.get(path).text
    assert "breathing" not in bob.post(f"{T}/context", {"query": q, "last_n_turns": 2}).text
    assert audit_records() == []  # no admin read anything yet


def test_admin_bypass_is_audited(as_):
    seed(as_)
    admin = as_("admin")
    assert listed(admin) == list(range(1, 9))
    records = audit_records()
    assert len(records) == 1
    rec = records[0]
    assert rec["principal"] == "ops-admin" and rec["action"] == "thread.list_turns"
    assert rec["threadId"] == "care-log" and rec["at"].endswith("Z") and rec["reason"] == "admin-bypass"
    ids = {t["turnIndex"]: t["turnId"] for t in admin.get(f"{T}/turns").json()["items"]}
    assert set(rec["recordIds"]) == {ids[2], ids[3], ids[4]}  # only the bypassed ones
    assert admin.get(f"{T}/turns/4").json()["text"].startswith("quarantined")
    assert audit_records()[-1]["recordIds"] == [ids[4]] and audit_records()[-1]["action"] == "thread.get_turn"
    before = len(audit_records())
    admin.get(f"{T}/turns/1")  # an open turn is no bypass
    assert len(audit_records()) == before
    got = context_indexes(admin, "breathing exercise anxiety", 4)
    assert {2, 3, 4} <= set(got["semantic"])
    assert audit_records()[-1]["action"] == "thread.context"


def test_thread_list_is_the_default_and_an_explicit_turn_list_wins(as_):
    admin, care, bob, alice = as_("admin"), as_("care"), as_("bob"), as_("alice")
    r = admin.put(f"{T}/acl", {"acl_readers": ["group:care-team-7"]})
    assert r.status == 200, r.text
    assert r.json()["aclReaders"] == ["group:care-team-7"] and r.json()["turnCount"] == 0
    admin.post(f"{T}/turns", {"text": "inherits the care team list about sleep hygiene"})
    admin.post(f"{T}/turns", {"text": "explicitly alice about sleep", "acl_readers": ["alice"]})
    admin.post(f"{T}/turns", {"text": "explicitly open? no: explicit [] is quarantine", "acl_readers": []})
    for i in range(4):
        admin.post(f"{T}/turns", {"text": f"filler {i}"})
    assert listed(care) == [1, 4, 5, 6, 7]
    assert listed(alice) == [2]
    # bob can read neither the thread nor any turn of it: it answers as a missing thread would
    assert bob.get(f"{T}/turns").status == 404
    assert bob.get(T).status == 404  # the thread itself is restricted by its own list
    assert care.get(T).json()["aclReaders"] == ["group:care-team-7"]
    # changing the thread list applies to inheriting turns at once, in reads and in search
    assert admin.put(f"{T}/acl", {"acl_readers": None}).json()["aclReaders"] is None
    assert listed(bob) == [1, 4, 5, 6, 7]
    assert 1 in context_indexes(bob, "sleep hygiene", 4)["semantic"]
    assert 2 not in context_indexes(bob, "sleep hygiene", 4)["semantic"]
    # quarantine the whole thread: only explicit lists still match non-admins
    admin.put(f"{T}/acl", {"aclReaders": []})
    assert listed(alice) == [2]  # an explicit turn list still reaches alice
    assert bob.get(f"{T}/turns").status == care.get(f"{T}/turns").status == 404  # as if missing
    r = bob.post(f"{T}/context", {"query": "sleep hygiene", "last_n_turns": 4})  # /context too (404)
    assert r.status == 404 and "sleep" not in r.text
    # alice still reads her own turn there (older than the window: a semantic match)
    assert context_indexes(alice, "sleep hygiene", 4) == {"recent": [], "semantic": [2]}
    # the search units followed the re-stamp (checked behind the API)
    ctx = RequestContext(context_id="acme", principal="t", admin=True)
    row = get_runtime().store.get(keys.thread_turns_pk(ctx, "care-log"), keys.thread_turn_sk(1))
    assert get_runtime().search.get("acme", row.data["id"]).acl_readers == []


def test_only_admins_change_a_thread_list(as_):
    as_("admin").post(f"{T}/turns", {"text": "x", "acl_readers": ["alice"]})
    r = as_("alice").put(f"{T}/acl", {"acl_readers": None})
    assert r.status == 403 and r.headers["content-type"] == "application/problem+json"
    cleared = as_("admin").put(f"{T}/acl", {})  # the spec requires nothing: omitted clears, as null does
    assert cleared.status == 200 and cleared.json()["aclReaders"] is None
    assert as_("admin").put(f"{T}/acl", {"acl_readers": "alice"}).status == 400


def test_writers_need_not_be_readers(as_):
    bob = as_("bob")
    r = bob.post(f"{T}/turns", {"text": "for the care team only", "acl_readers": ["group:care-team-7"]})
    assert r.status == 201
    assert listed(bob) == []
    assert listed(as_("care")) == [1]


def test_keys_are_required_when_configured(as_):
    anonymous = as_(None)
    r = anonymous.get(T)
    assert r.status == 401 and r.headers["www-authenticate"] == "Bearer"
    assert anonymous.post(f"{T}/turns", {"text": "x"}).status == 401
    wrong = anonymous.get(T, headers={"authorization": "Bearer not-a-configured-key"})
    assert wrong.status == 401
    assert anonymous.get(T, headers={"authorization": "Basic abc"}).status == 401
    assert as_("admin").get(T).status == 404  # authenticated: the thread just does not exist
