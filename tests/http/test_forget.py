"""POST /forget (semantic soft delete, dryRun, purge) and the derived copies that go with
forgotten memory and with deleted sessions: search units, idempotency replies, RecordsForgotten events.
Both stores, in-process and over the local server; responses validated against openapi.yaml."""

from __future__ import annotations

import pytest
from fused_search import fused_search
from openapi_schemas import assert_matches

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.ports import SearchFilter
from agent_memory.runtime import get_runtime
from agent_memory.services.events import RecordsForgotten
from agent_memory.services.facts.forget import FORGETTERS

CTX = "/api/v1/acme"
USER = "entity:person/user"
RCTX = RequestContext(context_id="acme", principal="t")


def write(api, text: str, **extra) -> dict:
    r = api.post(f"{CTX}/facts", {"text": text, **extra})
    assert r.status == 200, r.text
    return r.json()


def forget(api, **body) -> dict:
    r = api.post(f"{CTX}/forget", body)
    assert r.status == 200, r.text
    return assert_matches("POST", f"{CTX}/forget", r)


def get(api, path: str) -> dict:
    r = api.get(f"{CTX}{path}")
    assert r.status == 200, r.text
    return assert_matches("GET", f"{CTX}{path}", r)


def search_ids(query: str, as_of: str | None = None) -> set[str]:
    flt = SearchFilter(context_id="acme", as_of=as_of)
    return {h.unit.id for h in fused_search(get_runtime().search, query, flt, k=50)}


def state_values(api) -> set[str]:
    state = get(api, "/state")
    return {a["value"] for c in ("identity", "knowledge", "context") for a in state[c]["attributes"]}


@pytest.fixture
def forgotten_events():
    calls: list[tuple[str, set[str]]] = []
    get_runtime().events.subscribe(RecordsForgotten, lambda e: calls.append((e.ctx.context_id, set(e.ids))))
    return calls


def test_dry_run_lists_and_deletes_nothing(any_api, forgotten_events):
    write(any_api, "I like sushi.")
    write(any_api, "I live in London.")
    before = get(any_api, "/state")
    out = forget(any_api, query="sushi", dryRun=True)
    assert out["deleted"] == 0
    kinds = {(i["kind"], i["text"]) for i in out["items"]}
    assert ("attribute", "User likes: sushi") in kinds and ("turn", "I like sushi.") in kinds
    assert all(i["score"] >= 0.25 for i in out["items"])
    assert not [i for i in out["items"] if "London" in i["text"]]  # under the default minScore
    assert get(any_api, "/state") == before and forgotten_events == []


def test_forget_removes_facts_and_turns_from_every_read(any_api, forgotten_events):
    first = write(any_api, "I like sushi.")
    write(any_api, "I like pizza.", sessionId=first["sessionId"])
    sushi_attr = first["extraction"]["attributes"][0]["id"]
    out = forget(any_api, query="sushi", limit=20, minScore=0.3)
    assert {i["id"] for i in out["items"]} == {sushi_attr, first["turnId"]}
    assert out["deleted"] == 2
    assert state_values(any_api) == {"pizza"}
    assert [a["value"] for a in get(any_api, "/attributes?entity=person/user&key=likes")["items"]] == ["pizza"]
    assert [h["value"] for h in get(any_api, "/entities/person/user/history/likes")["history"]] == ["pizza"]
    assert sushi_attr not in {a["id"] for a in get(any_api, "/entities/person/user?asOf=2999-01-01T00:00:00Z")
                              ["attributes"]}
    assert {(e["key"], e["value"]) for e in get(any_api, "/profile")["selfFacts"]} == {("likes", "pizza")}
    turns = get(any_api, f"/sessions/{first['sessionId']}/turns")["turns"]
    assert [t["content"] for t in turns] == ["I like pizza."]
    assert get_runtime().sessions.get_turn(RCTX, first["turnId"]) is None
    assert not search_ids("sushi") & {sushi_attr, first["turnId"]}
    assert forgotten_events == [("acme", {sushi_attr, first["turnId"]})]
    assert forget(any_api, query="sushi", minScore=0.3)["items"] == []  # nothing left to find
    # Stating it again stores a new fact.
    again = write(any_api, "I like sushi.")["extraction"]["attributes"]
    assert [a["value"] for a in again] == ["sushi"] and again[0]["id"] != sushi_attr
    assert state_values(any_api) == {"pizza", "sushi"}


def test_forget_without_purge_keeps_the_superseded_history(any_api):
    write(any_api, "I live in London.", observed_at="2026-03-10T10:00:00Z")
    write(any_api, "I moved to Berlin.", observed_at="2026-05-10T10:00:00Z")
    out = forget(any_api, query="location Berlin", limit=1)
    assert [i["text"] for i in out["items"]] == ["User location: Berlin"]
    assert state_values(any_api) == set()  # no current location, and London does not come back
    assert [h["value"] for h in get(any_api, "/entities/person/user/history/location")["history"]] == ["London"]
    april = get(any_api, "/entities/person/user?asOf=2026-04-15T00:00:00Z")["attributes"]
    assert [a["value"] for a in april] == ["London"]
    june = get(any_api, "/entities/person/user?asOf=2026-06-15T00:00:00Z")["attributes"]
    assert june == []


def test_purge_hard_deletes_the_fact_and_its_history(any_api, forgotten_events):
    write(any_api, "I live in London.", observed_at="2026-03-10T10:00:00Z")
    second = write(any_api, "I moved to Berlin.", observed_at="2026-05-10T10:00:00Z")
    write(any_api, "I like tea.")
    rows = get(any_api, "/entities/person/user/history/location")["history"]
    london_id, berlin_id = (r["id"] for r in rows)
    out = forget(any_api, query="location Berlin", limit=1, purge=True)
    assert [i["id"] for i in out["items"]] == [berlin_id] and out["deleted"] == 1
    assert get(any_api, "/entities/person/user/history/location")["history"] == []
    assert get(any_api, "/entities/person/user?asOf=2026-04-15T00:00:00Z")["attributes"] == []
    store = get_runtime().store
    left = [r.data["id"] for r in store.query(keys.attrs_pk(RCTX, USER), prefix="a#location#", limit=100).records]
    assert left == []  # gone from the store, not just hidden
    assert not search_ids("London Berlin location", as_of="2026-04-15T00:00:00Z") & {london_id, berlin_id}
    assert forgotten_events and {london_id, berlin_id} <= forgotten_events[0][1]
    assert state_values(any_api) == {"tea"}
    # The turn that stated it is not a fact: it stays unless it is forgotten too.
    assert get_runtime().sessions.get_turn(RCTX, second["turnId"]) is not None


def idem_records(ctx):
    store = get_runtime().store
    return [r for pk in keys.idempotency_pks(ctx) for r in store.query(pk, limit=10).records]


def test_forget_drops_stored_idempotency_replies(any_api):
    headers = {"Idempotency-Key": "k-1"}
    r = any_api.post(f"{CTX}/facts", {"text": "I like sushi."}, headers=headers)
    assert r.status == 200
    idem = idem_records(RCTX)
    assert len(idem) == 1
    forget(any_api, query="sushi", limit=1, minScore=0.4)
    assert idem_records(RCTX) == []


def test_forget_validates_its_body(any_api):
    for body in ({}, {"query": ""}, {"query": "x", "limit": 21}, {"query": "x", "limit": 0},
                 {"query": "x", "minScore": 2}, {"query": "x", "bogus": 1}):
        r = any_api.post(f"{CTX}/forget", body)
        assert r.status == 400, (body, r.text)
        assert_matches("POST", f"{CTX}/forget", r)
    assert any_api.post(f"{CTX}/forget", {"query": "x", "dry_run": True, "min_score": 0.9}).status == 200


def test_actions_and_instructions_can_be_forgotten(any_api):
    write(any_api, "I ran a marathon yesterday.", observed_at="2026-05-02T10:00:00Z")
    write(any_api, "Always answer in German.")
    out = forget(any_api, query="ran marathon", limit=5)
    assert {i["kind"] for i in out["items"]} == {"action", "turn"}
    assert get(any_api, "/actions")["items"] == []
    out = forget(any_api, query="Always answer in German.", limit=1, minScore=0.9)
    assert [i["kind"] for i in out["items"]] in (["instruction"], ["turn"])
    forget(any_api, query="Always answer in German.", limit=5, minScore=0.9)
    assert get(any_api, "/instructions")["items"] == []
    assert get(any_api, "/state")["instructions"] == []


def test_chunks_plug_in_through_the_registry(any_api, monkeypatch):
    """A ``chunk_`` hit without a registered forgetter loses its search unit; with one, the
    forgetter's records are removed too."""
    from agent_memory.ports import Record, SearchUnit
    from agent_memory.services.facts.forget import Forgetter

    rt = get_runtime()
    monkeypatch.delitem(FORGETTERS, "chunk", raising=False)
    rt.search.upsert([SearchUnit(id="chunk_01aaa", context_id="acme", kind="chunk", text="the travel policy")])
    assert forget(any_api, query="travel policy", limit=1)["items"][0]["id"] == "chunk_01aaa"
    assert rt.search.get("acme", "chunk_01aaa") is None

    pk = "c#acme#default#chunks-test"
    rt.store.put(Record(pk=pk, sk="chunk_01bbb", data={"kind": "test-chunk", "id": "chunk_01bbb", "text": "expenses"}))

    class ChunkForgetter(Forgetter):
        def locate(self, rt, ctx, unit):
            return rt.store.get(pk, unit.id)

    monkeypatch.setitem(FORGETTERS, "chunk", ChunkForgetter())
    rt.search.upsert([SearchUnit(id="chunk_01bbb", context_id="acme", kind="chunk", text="expense claims")])
    assert forget(any_api, query="expense claims", limit=1)["deleted"] == 1
    assert rt.store.get(pk, "chunk_01bbb").data["deleted"] is True
    assert rt.search.get("acme", "chunk_01bbb") is None


def test_deleting_a_session_removes_its_turns_from_retrieval_and_notifies(any_api, forgotten_events):
    first = write(any_api, "I like sushi.")
    sid = first["sessionId"]
    write(any_api, "I live in Oslo.", sessionId=sid)
    other = write(any_api, "I like tea.")
    turn_ids = {t["id"] for t in get(any_api, f"/sessions/{sid}/turns")["turns"]}
    assert turn_ids <= search_ids("sushi Oslo")
    r = any_api.post(f"{CTX}/facts", {"text": "I like jazz.", "sessionId": sid}, headers={"Idempotency-Key": "j"})
    assert r.status == 200
    turn_ids.add(r.json()["turnId"])
    assert any_api.delete(f"{CTX}/sessions/{sid}").status == 204
    assert not search_ids("sushi Oslo jazz") & turn_ids
    assert other["turnId"] in search_ids("tea")
    assert forgotten_events and set().union(*(ids for _, ids in forgotten_events)) == turn_ids
    assert idem_records(RCTX) == []
    # Facts learned from the deleted turns stay (docs/decisions.md, "Sessions").
    assert {"sushi", "Oslo", "jazz", "tea"} <= state_values(any_api)


def test_forget_and_entity_delete_drop_cache_entries_that_used_them(any_api):
    import numpy as np

    rt = get_runtime()
    first = write(any_api, "I like sushi.")
    write(any_api, "My sister Emma lives in Oslo.")
    attr = first["extraction"]["attributes"][0]["id"]
    vec = np.ones(4, dtype=np.float32) / 2
    rt.response_cache.store_reply(RCTX, "offline/test", "what do I like?", vec, {"reply": "sushi"}, [], [attr])
    rt.response_cache.store_reply(RCTX, "offline/test", "who is Emma?", -vec, {"reply": "sister"},
                                  ["entity:person/emma"], [])
    assert rt.response_cache.lookup(RCTX, "offline/test", vec) is not None
    assert attr in {i["id"] for i in forget(any_api, query="sushi", limit=5, minScore=0.4)["items"]}
    assert rt.response_cache.lookup(RCTX, "offline/test", vec) is None
    assert rt.response_cache.lookup(RCTX, "offline/test", -vec) is not None
    assert any_api.delete(f"{CTX}/entities/person/emma").status == 204
    assert rt.response_cache.lookup(RCTX, "offline/test", -vec) is None


def test_a_forgotten_turn_keeps_no_text(any_api):
    first = write(any_api, "I like sushi.")
    forget(any_api, query="I like sushi.", limit=5, minScore=0.5)
    data = get_runtime().store.get(keys.turns_pk(RCTX, first["sessionId"]), keys.turn_sk(1)).data
    assert data["deleted"] is True and data["content"] == "" and data["id"] == first["turnId"]
