"""Memory care against its configured limits, on both stores, in process and over the local
server: a retention (``limits.retention_days``) expires old turns and actions with every
derived copy, as forget does, while supersession chains stay; and a spent model-call budget
(per call, or per tenant and UTC day) answers 503 ``model_budget_spent`` with nothing written."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from openapi_schemas import assert_matches

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.services.care.common import BUDGET_PK

CTX = "/api/v1/care"
RCTX = RequestContext(context_id="care", principal="t")


def write(api, text: str, **extra) -> dict:
    headers = extra.pop("headers", None)
    r = api.post(f"{CTX}/facts", {"text": text, **extra}, headers=headers)
    assert r.status == 200, r.text
    return r.json()


def colleagues(api) -> None:
    """Stu and Ann share an employer: elaborating Stu needs one model call."""
    r = api.post(f"{CTX}/facts", {"text": "import", "infer": "triples", "triples": [
        {"entity": {"type": "person", "name": name}, "key": "employer", "value": "Acme"} for name in ("Stu", "Ann")]})
    assert r.status == 200, r.text


def idempotency_keys(rt) -> list[str]:
    return sorted(r.sk for pk in keys.idempotency_pks(RCTX) for r in rt.store.query(pk, limit=50).records)


def turn_texts(api, session_id: str) -> list[str]:
    r = api.get(f"{CTX}/sessions/{session_id}/turns")
    assert r.status == 200, r.text
    return [t["content"] for t in r.json()["turns"]]


def test_retention_expires_old_turns_and_actions_with_their_copies(any_api, runtime):
    runtime.lifecycle.retention_days = 30
    old = write(any_api, "I ran a marathon yesterday.", observed_at="2020-05-02T10:00:00Z",
                headers={"Idempotency-Key": "old-write"})
    [action] = old["extraction"]["actions"]
    action_id = next(a["id"] for a in any_api.get(f"{CTX}/actions").json()["items"] if a["verb"] == action["verb"])
    moved = write(any_api, "I live in London.", observed_at="2020-03-10T10:00:00Z")
    write(any_api, "I moved to Berlin.", observed_at="2020-04-10T10:00:00Z", sessionId=moved["sessionId"])
    fresh = write(any_api, "I like tea.", headers={"Idempotency-Key": "fresh-write"})
    old_turns = {old["turnId"], moved["turnId"]}
    berlin_turn = next(t["id"] for t in any_api.get(f"{CTX}/sessions/{moved['sessionId']}/turns").json()["turns"]
                       if "Berlin" in t["content"])
    old_turns.add(berlin_turn)
    vec = np.ones(4, dtype=np.float32) / 2
    cache = runtime.response_cache
    cache.store_reply(RCTX, "offline/test", "what did I run?", vec, {"reply": "a marathon"}, [], [old["turnId"]])
    cache.store_reply(RCTX, "offline/test", "what do I drink?", -vec, {"reply": "tea"}, [], [fresh["turnId"]])
    assert [k.rsplit("#", 1)[1] for k in idempotency_keys(runtime)] == ["fresh-write", "old-write"]
    assert all(runtime.search.get("care", i) is not None for i in old_turns)

    dry = any_api.post(f"{CTX}/lifecycle/expire", {"dryRun": True})
    assert dry.status == 200, dry.text
    preview = assert_matches("POST", f"{CTX}/lifecycle/expire", dry)
    assert preview["dryRun"] and set(preview["ids"]) == old_turns | {action_id} and preview["affected"] == 4
    assert runtime.search.get("care", old["turnId"]) is not None  # a dry run removes nothing
    assert cache.lookup(RCTX, "offline/test", vec) is not None

    done = any_api.post(f"{CTX}/lifecycle/expire").json()
    assert (done["affected"], set(done["ids"]), done["dryRun"]) == (4, old_turns | {action_id}, False)
    # Gone from every copy: the reads, the search units, the cached reply, the stored reply.
    assert all(runtime.search.get("care", i) is None for i in old_turns | {action_id})
    assert [a["id"] for a in any_api.get(f"{CTX}/actions").json()["items"]] == []
    assert turn_texts(any_api, moved["sessionId"]) == [] and turn_texts(any_api, old["sessionId"]) == []
    assert cache.lookup(RCTX, "offline/test", vec) is None
    assert cache.lookup(RCTX, "offline/test", -vec) is not None  # cites a recent turn: stays
    assert [k.rsplit("#", 1)[1] for k in idempotency_keys(runtime)] == ["fresh-write"]
    replay = any_api.post(f"{CTX}/facts", {"text": "I ran a marathon yesterday.", "observed_at": "2020-05-02T10:00:00Z"},
                          headers={"Idempotency-Key": "old-write"})
    assert replay.headers.get("idempotent-replayed") != "true"  # its stored reply went with the turn
    # What is within the retention stays; the attributes' supersession chain stays (never expired).
    assert turn_texts(any_api, fresh["sessionId"]) == ["I like tea."]
    assert runtime.search.get("care", fresh["turnId"]) is not None
    history = any_api.get(f"{CTX}/entities/person/user/history/location").json()["history"]
    assert sorted(h["value"] for h in history) == ["Berlin", "London"]
    assert any(h["supersededBy"] for h in history)


def test_retention_off_expires_nothing_by_age(any_api, runtime):
    assert runtime.lifecycle.retention_days == 0  # the default
    write(any_api, "I ran a marathon yesterday.", observed_at="2020-05-02T10:00:00Z")
    assert any_api.post(f"{CTX}/lifecycle/expire", {"dryRun": True}).json()["affected"] == 0


def budget(runtime, monkeypatch: pytest.MonkeyPatch, **limits: int) -> None:
    s = runtime.settings
    monkeypatch.setattr(runtime, "settings", dataclasses.replace(s, limits=dataclasses.replace(s.limits, **limits)))


def spent(r) -> dict:
    assert r.status == 503, r.text
    body = r.json()
    assert body["code"] == "model_budget_spent" and r.headers.get("retry-after"), body
    return body


def memory_rows(runtime) -> list[tuple[str, str, int]]:
    return sorted((r.pk, r.sk, r.version) for r in runtime.base_store.scan("c#care#"))


def test_a_spent_per_call_budget_answers_503_and_writes_nothing(any_api, runtime, model, monkeypatch):
    colleagues(any_api)
    budget(runtime, monkeypatch, care_model_calls_per_call=0)
    before, calls = memory_rows(runtime), model.calls["structured"]
    body = spent(any_api.post(f"{CTX}/reflect", {"query": "Stu employer Acme", "persist": True}))
    assert "this request's model-call budget (0)" in body["detail"]
    assert memory_rows(runtime) == before and model.calls["structured"] == calls  # no call, no row, no trace
    assert runtime.base_store.query(BUDGET_PK, limit=5).records == []  # refused before the day's count


def test_a_spent_daily_budget_answers_503_and_writes_nothing(any_api, runtime, model, monkeypatch):
    colleagues(any_api)
    budget(runtime, monkeypatch, care_model_calls_per_day=1)
    first = any_api.post(f"{CTX}/reflect", {"query": "Stu employer Acme"})
    assert first.status == 200, first.text
    day = [r for r in runtime.base_store.query(BUDGET_PK, limit=5).records]
    assert [r.data["used"] for r in day] == [1]
    before, calls = memory_rows(runtime), model.calls["structured"]
    body = spent(any_api.post(f"{CTX}/reflect", {"query": "Stu employer Acme", "persist": True}))
    assert "today's model-call budget for memory care (1)" in body["detail"]
    assert spent(any_api.post(f"{CTX}/reflect", {"query": "Stu employer Acme"})) and any_api.post(
        f"{CTX}/reflect", {"query": "Stu employer Acme"}).headers.get("retry-after") == "3600"
    spent(any_api.post(f"{CTX}/elaborate", {"entityRef": "person/stu"}))
    assert memory_rows(runtime) == before and model.calls["structured"] == calls
    assert [r.data["used"] for r in runtime.base_store.query(BUDGET_PK, limit=5).records] == [1]
