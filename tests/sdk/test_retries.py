"""Retries and error mapping, on a scripted transport: which calls are retried, the
250/500/1000 ms schedule with jitter, Retry-After, the deadline, one idempotency key per
logical call, and the typed error of each status. Sync and async."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agent_memory.client import (
    AgentMemory,
    AgentMemoryError,
    AsyncAgentMemory,
    AuthenticationError,
    ModelError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
)

HEALTH = {"status": "ok"}
WRITE = {"mode": "none", "sessionId": "sess_1", "turnId": "turn_1", "extraction": None}


class Script:
    """Answers each request with the next scripted (status, body, headers); records requests."""

    def __init__(self, *answers: tuple[int, dict, dict] | Exception):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, body, headers = answer
        ctype = "application/json" if status < 400 else "application/problem+json"
        return httpx.Response(status, json=body, headers={"content-type": ctype, **headers})


def problem(status: int, **extra) -> dict:
    return {"type": "about:blank", "title": "t", "status": status, "detail": f"failed {status}", **extra}


def client(script: Script, slept: list[float], **kw) -> AgentMemory:
    return AgentMemory("acme", base_url="http://sdk.test", http_transport=httpx.MockTransport(script),
                       sleep=slept.append, **kw)


def test_retry_after_is_honoured():
    script = Script((503, problem(503, code="overloaded"), {"retry-after": "2"}), (200, HEALTH, {}))
    slept: list[float] = []
    assert client(script, slept).health().status == "ok"
    assert slept == [2.0]


def test_reads_back_off_250_500_1000_ms_with_jitter_then_give_up():
    script = Script(*[(502, problem(502), {})] * 4)
    slept: list[float] = []
    with pytest.raises(ModelError) as err:
        client(script, slept).state()
    assert len(script.requests) == 4 and len(slept) == 3  # three retries after the first attempt
    for wait, nominal in zip(slept, (0.25, 0.5, 1.0), strict=True):
        assert 0.8 * nominal <= wait <= 1.2 * nominal
    assert err.value.status == 502 and err.value.detail == "failed 502"


def test_a_keyed_write_reuses_its_idempotency_key_across_retries():
    script = Script(httpx.ReadError("reset"), (504, problem(504), {}), *[(200, WRITE, {})] * 3)
    slept: list[float] = []
    memory = client(script, slept)
    assert memory.remember("I live in Lisbon.").turn_id == "turn_1"
    keys = [r.headers["idempotency-key"] for r in script.requests]
    assert len(keys) == 3 and len(set(keys)) == 1
    memory.remember("I live in Lisbon.")
    assert script.requests[-1].headers["idempotency-key"] != keys[0]  # a new logical call, a new key
    memory.remember("x", idempotency_key="mine")
    assert script.requests[-1].headers["idempotency-key"] == "mine"


def test_unkeyed_writes_are_not_retried_after_they_may_have_run():
    script = Script((502, problem(502), {}), httpx.ReadError("reset"))
    slept: list[float] = []
    memory = client(script, slept)
    with pytest.raises(ModelError):
        memory.chat("hi")
    with pytest.raises(AgentMemoryError):
        memory.sessions.create()
    assert len(script.requests) == 2 and slept == []


def test_shed_requests_are_retried_even_unkeyed():
    chat = {"reply": "hi", "sessionId": "s", "traceId": "t", "citations": [],
            "memoryUpdates": {"turnId": "u", "entities": [], "attributes": [], "relations": [], "actions": [],
                              "instructions": [], "uncertainties": [], "corrections": []}}
    script = Script((503, problem(503), {"retry-after": "1"}), (200, chat, {}))
    slept: list[float] = []
    assert client(script, slept).chat("hi").reply == "hi" and slept == [1.0]


def test_a_wait_past_the_deadline_raises_at_once():
    script = Script((429, problem(429), {"retry-after": "5"}))
    slept: list[float] = []
    with pytest.raises(RateLimitedError) as err:
        client(script, slept, retry_budget_s=1).health()
    assert slept == [] and err.value.retry_after == 5.0


@pytest.mark.parametrize("status,cls", [(401, AuthenticationError), (403, PermissionDeniedError),
                                        (504, ModelError), (500, ServerError)])
def test_each_status_has_its_error(status, cls):
    script = Script(*[(status, problem(status, code="why"), {"x-request-id": "req-7"})] * 4)
    with pytest.raises(cls) as err:
        client(script, [], max_retries=0).health()
    assert (err.value.status, err.value.code, err.value.trace_id) == (status, "why", "req-7")


def test_settings_come_from_arguments_or_the_environment(monkeypatch):
    monkeypatch.setenv("AGENT_MEMORY_URL", "http://env.test")
    monkeypatch.setenv("AGENT_MEMORY_API_KEY", "env-key")
    script = Script((200, HEALTH, {}), (200, HEALTH, {}))
    transport = httpx.MockTransport(script)
    AgentMemory("acme", partition="clinic-a", on_behalf_of="bob", http_transport=transport).health()
    AgentMemory("acme", base_url="http://arg.test", api_key="arg-key", http_transport=transport).health()
    first, second = script.requests
    assert str(first.url) == "http://env.test/api/v1/health"
    assert first.headers["authorization"] == "Bearer env-key"
    assert first.headers["x-memory-partition"] == "clinic-a" and first.headers["x-spectron-on-behalf-of"] == "bob"
    assert str(second.url).startswith("http://arg.test/") and second.headers["authorization"] == "Bearer arg-key"


def test_async_retries_follow_the_same_policy():
    script = Script(httpx.ConnectError("down"), (503, problem(503), {"retry-after": "0.5"}), (200, WRITE, {}))
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def main():
        async with AsyncAgentMemory("acme", base_url="http://sdk.test", sleep=sleep,
                                    http_transport=httpx.MockTransport(script)) as memory:
            return await memory.remember("I live in Lisbon.")

    assert asyncio.run(main()).session_id == "sess_1"
    assert len({r.headers["idempotency-key"] for r in script.requests}) == 1
    assert slept[1] == 0.5 and 0.2 <= slept[0] <= 0.3
    assert json.loads(script.requests[0].content) == {"text": "I live in Lisbon."}


def test_a_stream_error_frame_raises_the_typed_error():
    frames = ('event: delta\ndata: {"delta": "Hel"}\n\n'
              'event: error\ndata: {"type": "about:blank", "title": "Model failed", "status": 502, '
              '"detail": "upstream broke", "code": "model_error"}\n\ndata: [DONE]\n\n')
    calls = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:  # shed before the stream starts: retried
            return httpx.Response(503, json=problem(503), headers={"retry-after": "0"})
        return httpx.Response(200, text=frames, headers={"content-type": "text/event-stream"})

    slept: list[float] = []
    memory = AgentMemory("acme", base_url="http://sdk.test", http_transport=httpx.MockTransport(answer),
                         sleep=slept.append)
    stream = memory.chat("hi", stream=True)
    parts = []
    with pytest.raises(ModelError) as err:
        for part in stream:
            parts.append(part)
    assert parts == ["Hel"] and err.value.code == "model_error" and err.value.detail == "upstream broke"
    assert json.loads(calls[-1].content) == {"message": "hi", "stream": True}
    assert calls[-1].headers["accept"] == "text/event-stream" and slept == [0.0]


def test_a_retried_delete_that_finds_the_record_gone_succeeded():
    script = Script(httpx.ReadError("reset after the delete ran"), (404, problem(404), {}), (404, problem(404), {}))
    slept: list[float] = []
    memory = client(script, slept)
    assert memory.documents.delete("doc_1") is None and len(slept) == 1
    with pytest.raises(NotFoundError):  # a first attempt's 404 is a real one
        memory.documents.delete("doc_2")


def test_a_streamed_chat_throttled_by_lambda_is_retried_and_the_error_says_it_gave_up():
    """A stack's streaming URL answers Lambda's own 429 once its reserved concurrency is in use
    (docs/deploying.md, "Streaming chat"): retried with backoff, then raised saying so."""
    calls = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(429, json={"Message": "Rate Exceeded."},
                              headers={"x-amzn-errortype": "TooManyRequestsException"})

    slept: list[float] = []
    memory = AgentMemory("acme", base_url="http://api.test", stream_url="http://url.test",
                         http_transport=httpx.MockTransport(answer), sleep=slept.append)
    with pytest.raises(RateLimitedError) as err:
        list(memory.chat("hi", stream=True))
    assert len(calls) == 4 and {c.url.host for c in calls} == {"url.test"}
    assert len(slept) == 3
    assert 0.2 <= slept[0] <= 0.3 and 0.4 <= slept[1] <= 0.6 and 0.8 <= slept[2] <= 1.2
    assert err.value.status == 429 and err.value.detail == "Rate Exceeded."
    assert str(err.value).endswith("(gave up after 4 attempts)")


def test_an_error_answered_at_once_does_not_claim_retries():
    script = Script((401, problem(401), {}))
    with pytest.raises(AuthenticationError) as err:
        client(script, []).health()
    assert "gave up" not in str(err.value)
