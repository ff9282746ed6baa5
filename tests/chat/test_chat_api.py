"""POST /chat end to end on both stores, in-process and over HTTP: memory across turns,
citations, corrections, the tier-2 cache, failures that write nothing, SSE, load shedding."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from agent_memory.ports import ModelError, ModelTimeout
from agent_memory.runtime import get_runtime

CTX = "/api/v1/acme"


def records_except_traces() -> list[tuple[str, str, int]]:
    rt = get_runtime()
    return sorted((r.pk, r.sk, r.version) for r in rt.base_store.scan("c#acme#") if "#traces" not in r.pk)


def trace_parts() -> list[tuple[str, str]]:
    """(trace id, part) of every trace row: a turn's two parts commit with its turns, and a
    failed turn still leaves its retrieval part."""
    rt = get_runtime()
    return sorted((r.data["traceId"], r.data["part"]) for r in rt.base_store.scan("c#acme#") if "#traces" in r.pk)


def chat(api, message: str, **extra) -> dict:
    r = api.post(f"{CTX}/chat", {"message": message, **extra})
    assert r.status == 200, r.text
    return r.json()


def test_multi_turn_memory_citations_and_corrections(any_api, model):
    first = chat(any_api, "I live in London and I like sushi.")
    sid = first["sessionId"]
    assert {a["value"] for a in first["memoryUpdates"]["attributes"]} >= {"London", "sushi"}
    assert first["traceId"].startswith("trace_")
    second = chat(any_api, "Where do I live?", sessionId=sid)
    assert "London" in second["reply"]
    assert second["citations"], second
    cited = second["citations"][0]
    assert cited["marker"] in second["reply"] and set(cited) >= {"marker", "id", "kind", "snippet", "score"}
    third = chat(any_api, "I moved to Berlin last month.", sessionId=sid)
    assert third["memoryUpdates"]["corrections"] == [
        {"entityId": "entity:person/user", "key": "location", "oldValue": "London", "newValue": "Berlin"}]
    turns = any_api.get(f"{CTX}/sessions/{sid}/turns").json()["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"] * 3
    assert model.calls["complete"] == 3 and model.calls["structured"] == 3


def test_retrieval_reaches_older_turns_beyond_the_window(api, model):
    sid = chat(api, "My favourite colour is teal.")["sessionId"]
    for i in range(6):
        chat(api, f"Filler message number {i} about nothing.", sessionId=sid)
    reply = chat(api, "What is my favourite colour?", sessionId=sid)
    assert "teal" in reply["reply"].lower()
    trace = api.get(f"{CTX}/traces/{reply['traceId']}").json()
    assert trace["retrieval"]["excluded"] and trace["response"]["tier"] == 3


def test_repeated_first_turn_question_hits_the_cache(any_api, model):
    chat(any_api, "I live in Oslo.")
    first = chat(any_api, "Where do I live?")
    calls = dict(model.calls)
    second = chat(any_api, "Where do I live?")
    assert second["reply"] == first["reply"] and second["citations"] == first["citations"]
    assert model.calls["complete"] == calls["complete"]  # no response call
    assert model.calls["structured"] == calls["structured"] + 1  # its user turn is still extracted
    trace = any_api.get(f"{CTX}/traces/{second['traceId']}").json()
    assert trace["response"]["tier"] == 2 and trace["response"]["cached"] is True
    turns = any_api.get(f"{CTX}/sessions/{second['sessionId']}/turns").json()["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"]


def test_bypass_cache_and_non_empty_window_skip_the_cache(api, model):
    chat(api, "I live in Oslo.")
    chat(api, "Where do I live?")
    n = model.calls["complete"]
    chat(api, "Where do I live?", bypassCache=True)
    assert model.calls["complete"] == n + 1
    sid = chat(api, "Hello there.")["sessionId"]
    chat(api, "Where do I live?", sessionId=sid)  # window non-empty: neither read nor written
    assert model.calls["complete"] == n + 3
    rt = get_runtime()
    entries = [r for r in rt.base_store.scan("c#acme#") if r.data.get("kind") == "cache_entry"]
    # first-turn calls only: the bypassed and the windowed call wrote nothing
    assert sorted(r.data["query"] for r in entries) == ["Hello there.", "I live in Oslo.", "Where do I live?"]


def test_cache_entry_is_invalidated_when_cited_entity_facts_change(api, model):
    chat(api, "I live in Oslo.")
    chat(api, "Where do I live?")
    api.post(f"{CTX}/facts", {"text": "I moved to Bergen."})
    n = model.calls["complete"]
    reply = chat(api, "Where do I live?")
    assert model.calls["complete"] == n + 1
    assert "Bergen" in reply["reply"]


def test_a_refusal_is_outdated_again_when_a_statement_becomes_searchable(api, model):
    """A statement with no facts moves nothing at commit; once projection applies it (here
    held back, as a stream or a background projector would), the refusal cached before it
    is not served again."""
    rt = get_runtime()
    refusal = chat(api, "What colour is my bicycle?")
    assert refusal["citations"] == [] and "don't have anything" in refusal["reply"]
    rt.projector.pause()
    try:
        assert api.post(f"{CTX}/facts", {"text": "My bicycle is painted orange.", "infer": "none"}).status == 200
        n = model.calls["complete"]
        assert chat(api, "What colour is my bicycle?")["reply"] == refusal["reply"]  # not searchable yet
        assert model.calls["complete"] == n  # served by the cache
    finally:
        rt.projector.resume()
    answered = chat(api, "What colour is my bicycle?")
    assert "orange" in answered["reply"] and answered["citations"], answered


def test_an_entry_begun_before_a_write_is_never_served(runtime):
    """The entry's id is taken when its turn starts: a write that commits while the reply is
    made outdates it, though it is stored after the write."""
    from agent_memory.access.request_context import RequestContext

    cache = runtime.response_cache
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    vector = [1.0, 0.0]
    begun = cache.begin()
    cache.mark_written("acme", ctx.partition)
    cache.store_reply(ctx, "m", "q?", vector, {"reply": "old", "citations": []}, [], [], entry_id=begun)
    assert cache.lookup(ctx, "m", vector) is None
    cache.store_reply(ctx, "m", "q?", vector, {"reply": "new", "citations": []}, [], [])
    assert cache.lookup(ctx, "m", vector).response["reply"] == "new"
    cache.mark_written("other", ctx.partition)  # another context's write changes nothing here
    assert cache.lookup(ctx, "m", vector).response["reply"] == "new"


def test_a_reply_that_cites_nothing_is_kept_but_never_evidence(any_api, model):
    refusal = chat(any_api, "Which planet do I dream of visiting?")
    assert refusal["citations"] == []
    turns = any_api.get(f"{CTX}/sessions/{refusal['sessionId']}/turns").json()["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"]  # the transcript keeps it
    hits = any_api.post(f"{CTX}/query", {"query": "I don't have anything in memory about that."}).json()["hits"]
    assert all(h.get("role") != "assistant" for h in hits), hits
    chat(any_api, "I dream of visiting Saturn.")
    again = chat(any_api, "Which planet do I dream of visiting?", sessionId=refusal["sessionId"])
    assert "Saturn" in again["reply"], again


@pytest.mark.parametrize("failure,status", [(ModelTimeout("slow"), 504), (ModelError("down"), 502)])
def test_failing_model_leaves_the_store_as_it_was(any_api, model, failure, status):
    sid = chat(any_api, "I live in Rome.")["sessionId"]
    before = records_except_traces()
    model.kind_failures["complete"] = [failure]  # extraction succeeds, the response call fails
    r = any_api.post(f"{CTX}/chat", {"message": "I moved to Milan. Where do I live?", "sessionId": sid})
    assert r.status == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert records_except_traces() == before
    parts = trace_parts()
    failed = [t for t, part in parts if part == "retrieval" and (t, "response") not in parts]
    assert len(failed) == 1, parts  # the failed turn's retrieval trace, and no response part


def test_failing_extraction_fails_the_turn_and_writes_nothing(api, model):
    chat(api, "I live in Rome.")
    before = records_except_traces()
    model.kind_failures["structured"] = [ModelTimeout("slow")]
    traces_before = trace_parts()
    r = api.post(f"{CTX}/chat", {"message": "I moved to Milan.", "bypassCache": True})
    assert r.status == 504
    assert records_except_traces() == before
    assert [p for _, p in set(trace_parts()) - set(traces_before)] == ["retrieval"]


def test_suppress_markers(api, model):
    chat(api, "I live in Oslo.")
    reply = chat(api, "Where do I live?", suppressMarkers=True, bypassCache=True)
    assert "[S" not in reply["reply"] and reply["citations"]


def test_assistant_replies_are_cited_with_role_assistant(api, model, monkeypatch):
    """A model that cites a stored assistant reply gets it back as a citation with role
    ``assistant`` (the offline model never quotes one: here a stand-in responder does)."""
    import re

    def cite_the_reply(messages):
        prompt = "\n".join(m.content for m in messages)
        found = re.search(r"^\[(S\d+)\] \(turn, assistant[^)]*\) (.*)$", prompt, re.MULTILINE)
        return f"It says: {found.group(2)} [{found.group(1)}]" if found else "Nothing."

    monkeypatch.setattr("agent_memory.adapters.models.offline.default_offline_responder", cite_the_reply)
    sid = chat(api, "Tell me a fact.")["sessionId"]
    rt = get_runtime()
    from agent_memory.access.request_context import RequestContext
    from agent_memory.services.conversation.sessions import NewTurn

    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    session = rt.sessions.resolve_for_write(ctx, sid, [], [])
    rt.sessions.append_turns(ctx, session, [NewTurn("assistant", "The Zanzibar archive opens at nine.", infer="none")],
                             [], [])
    reply = chat(api, "When does the Zanzibar archive open?", bypassCache=True)
    roles = {c["role"] for c in reply["citations"] if c["kind"] == "turn"}
    assert "assistant" in roles


def test_bad_input(api):
    assert api.post(f"{CTX}/chat", {"message": ""}).status == 400
    refused = api.post(f"{CTX}/chat", {"message": "hi", "model": "openai/gpt-5"}).json()
    assert refused["field"] == "model"
    # the 400 names what a request may ask for: the response model and models.allowed
    allowed = get_runtime().settings.models.allowed_names()
    assert allowed and refused["detail"].endswith("allowed: " + ", ".join(allowed))
    assert api.post(f"{CTX}/chat", {"message": "x" * (32 * 1024 + 1)}).status == 413
    deleted = api.post(f"{CTX}/sessions").json()["id"]
    assert api.delete(f"{CTX}/sessions/{deleted}").status == 204
    assert api.post(f"{CTX}/chat", {"message": "hi", "sessionId": deleted}).status == 404
    assert api.get(f"{CTX}/traces/trace_missing").status == 404


def sse_events(text: str) -> list[tuple[str, object]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = lines.get("data")
        events.append((lines.get("event", "message"), data if data == "[DONE]" else json.loads(data)))
    return events


def test_stream_delivers_deltas_then_done(any_api, model):
    chat(any_api, "I live in Oslo.")
    r = any_api.post(f"{CTX}/chat", {"message": "Where do I live?", "stream": True})
    assert r.status == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    kinds = [e for e, _ in events]
    assert kinds[-2:] == ["done", "message"] and events[-1][1] == "[DONE]"
    assert kinds.count("delta") >= 2
    done = events[-2][1]
    assert "".join(d["delta"] for e, d in events if e == "delta").strip() == done["reply"]
    assert done["citations"] and done["sessionId"] and done["traceId"] and "memoryUpdates" in done


def test_stream_error_frame_writes_nothing(api, model):
    chat(api, "I live in Oslo.")
    before = records_except_traces()
    model.kind_failures["stream"] = [ModelError("down")]
    r = api.post(f"{CTX}/chat", {"message": "Where do I live?", "stream": True, "bypassCache": True})
    events = sse_events(r.text)
    assert [e for e, _ in events] == ["error", "message"]
    assert events[0][1]["status"] == 502
    assert records_except_traces() == before


def test_a_model_still_writing_at_the_deadline_ends_the_stream_with_an_error_and_writes_nothing(
        api, model, monkeypatch):
    from agent_memory.kernel import deadline

    chat(api, "I live in Oslo.")
    before = records_except_traces()
    inner_stream, past = model.stream, threading.Event()

    def writes_past_the_deadline(messages, **kw):
        for piece in inner_stream(messages, **kw):
            yield piece
            past.set()  # every read answered in time, but the request's time is up

    real_expired = deadline.expired
    monkeypatch.setattr(model, "stream", writes_past_the_deadline)
    monkeypatch.setattr(deadline, "expired", lambda: past.is_set() or real_expired())
    r = api.post(f"{CTX}/chat", {"message": "Where do I live?", "stream": True, "bypassCache": True})
    events = sse_events(r.text)
    assert [e for e, _ in events][-2:] == ["error", "message"]
    assert events[-2][1]["status"] == 504
    assert records_except_traces() == before


def test_local_server_streams_incrementally(server, runtime, model, monkeypatch):
    release = threading.Event()
    inner_stream = model.stream

    def slow_stream(messages, **kw):
        for i, piece in enumerate(inner_stream(messages, **kw)):
            if i == 1:
                release.wait(10)
            yield piece

    monkeypatch.setattr(model, "stream", slow_stream)
    with httpx.Client(base_url=server, timeout=30) as client:
        with client.stream("POST", f"{CTX}/chat", json={"message": "Hello", "stream": True}) as resp:
            chunks = resp.iter_text()
            first = next(chunks)
            assert first.startswith("event: delta")  # arrived while the model is still held
            release.set()
            rest = "".join(chunks)
    assert "event: done" in rest and rest.rstrip().endswith("data: [DONE]")


def test_inflight_cap_sheds_load_with_retry_after(client, runtime, model, monkeypatch):
    monkeypatch.setattr(runtime.inflight, "cap", 1)
    entered, release = threading.Event(), threading.Event()
    inner = model.complete

    def held(messages, **kw):
        entered.set()
        release.wait(10)
        return inner(messages, **kw)

    monkeypatch.setattr(model, "complete", held)
    results = {}
    worker = threading.Thread(target=lambda: results.setdefault(
        "first", client.post(f"{CTX}/chat", json={"message": "hello"})))
    worker.start()
    assert entered.wait(10)
    busy = client.post(f"{CTX}/chat", json={"message": "second"})
    release.set()
    worker.join(10)
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
    assert busy.json()["code"] == "inflight_cap"
    assert results["first"].status_code == 200
    time.sleep(0.05)
    assert client.post(f"{CTX}/chat", json={"message": "third"}).status_code == 200


def test_a_statement_is_acknowledged_and_its_compound_values_split(api, model):
    """The offline reply notes what the statement says (from its own parse, not from the
    write), and the write stores the employer and the title apart, the pet by its name."""
    first = chat(api, "I work at Globex as a data engineer.")
    assert first["reply"] == "Noted: you work at Globex as a data engineer." and first["citations"] == []
    stored = {(a["key"], a["value"]) for a in first["memoryUpdates"]["attributes"]}
    assert stored == {("employer", "Globex"), ("job_title", "data engineer")}
    pet = chat(api, "I have a dog named Rex.", sessionId=first["sessionId"])
    assert pet["reply"] == "Noted: you have a dog named Rex."
    assert [(r["label"], r["object"]) for r in pet["memoryUpdates"]["relations"]] == [("pet", "entity:other/rex")]
