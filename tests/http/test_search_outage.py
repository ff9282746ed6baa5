"""Search down (refused, timed out, 5xx, throttled): writes that commit answer 200 and are
in /state, reads answer 200 from the record store and say they are degraded, forget
refuses with 503 and deletes nothing, the breaker stops calling the index, and once the
index answers again the pending projections catch up. Both stores, in-process and over
the local server."""

from __future__ import annotations

import time
from typing import Any

import pytest
from openapi_schemas import assert_matches
from opensearchpy import exceptions as ose

from agent_memory.adapters.opensearch.client import search_failure
from agent_memory.adapters.search_breaker import GUARDED, CircuitBreakingSearchIndex
from agent_memory.runtime import Runtime

CTX = "/api/v1/acme"
DEGRADED = "x-memory-degraded"

FAILURES = {
    "refused": lambda: ose.ConnectionError("N/A", "connection refused", OSError("refused")),
    "timeout": lambda: ose.ConnectionTimeout("TIMEOUT", "read timed out", None),
    "server-error": lambda: ose.TransportError(503, "service_unavailable", {}),
    "throttled": lambda: ose.TransportError(429, "too_many_requests", {}),
}


class FlakyIndex:
    """The runtime's index, failing the way an unreachable OpenSearch does while
    ``failure`` is set (the adapter's own mapping turns the error into SearchUnavailable)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.failure: str | None = None
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name not in GUARDED:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.failure is not None:
                if self.failure == "timeout":
                    time.sleep(0.05)  # what the breaker saves on every later request
                raise search_failure(FAILURES[self.failure]())
            return value(*args, **kwargs)

        return call


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def outage(runtime: Runtime):
    """Installed before the store and the services are built, so every one of them sees it."""
    flaky = FlakyIndex(runtime.search)
    clock = Clock()
    breaker = CircuitBreakingSearchIndex(flaky, failures_to_open=3, cool_down_s=30, clock=clock)
    runtime.__dict__["search"] = breaker
    return flaky, breaker, clock


def post(api, path: str, body: dict) -> Any:
    return api.post(f"{CTX}{path}", body)


def state_values(api) -> set[str]:
    r = api.get(f"{CTX}/state")
    assert r.status == 200, r.text
    state = r.json()
    return {a["value"] for c in ("identity", "knowledge", "context") for a in state[c]["attributes"]}


def assert_degraded(r, path: str) -> dict:
    assert r.status == 200, r.text
    assert r.headers.get(DEGRADED) == "search-unavailable", r.headers
    return assert_matches("POST", f"{CTX}{path}", r)


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_search_outage_degrades_refuses_cleanly_and_catches_up(outage, any_api, model, runtime, failure):
    flaky, breaker, clock = outage
    flaky.failure = failure

    # A write commits and says so: 200, in /state, its projection pending.
    wrote = post(any_api, "/facts", {"text": "I live in Lisbon."})
    assert wrote.status == 200, wrote.text
    turn_id, session_id = wrote.json()["turnId"], wrote.json()["sessionId"]
    assert state_values(any_api) == {"Lisbon"}
    assert runtime.store.pending_projections >= 1

    # Reads answer from the record store and say so.
    query = assert_degraded(post(any_api, "/query", {"query": "Where do I live?"}), "/query")
    assert query["trace"]["degraded"] == "search-unavailable"
    assert any("Lisbon" in h["text"] for h in query["hits"]), query  # the tier-1 fact
    context = assert_degraded(post(any_api, "/context", {"query": "Where do I live?"}), "/context")
    assert "Lisbon" in context["context"]
    path = f"/sessions/{session_id}/context"
    assert_degraded(post(any_api, path, {"query": "Where do I live?"}), path)

    # Chat answers; a degraded reply is not cached (the same question again is not a cache hit).
    for _ in range(2):
        reply = assert_degraded(post(any_api, "/chat", {"message": "Where do I live?"}), "/chat")
        trace = any_api.get(f"{CTX}/traces/{reply['traceId']}").json()
        assert trace["retrieval"]["degraded"] == "search-unavailable"
        assert trace["response"]["cached"] is False
        turns = any_api.get(f"{CTX}/sessions/{reply['sessionId']}/turns").json()["turns"]
        assert [t["role"] for t in turns] == ["user", "assistant"]  # the chat's writes committed

    streamed = post(any_api, "/chat", {"message": "Where do I live?", "stream": True})
    assert streamed.status == 200 and streamed.headers.get(DEGRADED) == "search-unavailable"
    assert "event: done" in streamed.text, streamed.text

    # Forget cannot be done safely without search: 503 + Retry-After, nothing deleted.
    before = any_api.get(f"{CTX}/state").json()
    refused = post(any_api, "/forget", {"query": "Lisbon"})
    assert refused.status == 503, refused.text
    assert int(refused.headers["retry-after"]) >= 1
    assert assert_matches("POST", f"{CTX}/forget", refused)["code"] == "search_unavailable"
    assert any_api.get(f"{CTX}/state").json() == before
    assert [t["id"] for t in any_api.get(f"{CTX}/sessions/{session_id}/turns").json()["turns"]] == [turn_id]

    # The breaker is open: requests no longer reach the index.
    assert breaker.is_open
    calls = flaky.calls
    for _ in range(3):
        assert_degraded(post(any_api, "/query", {"query": "Lisbon"}), "/query")
    assert post(any_api, "/facts", {"text": "I like fado."}).status == 200
    assert flaky.calls == calls and breaker.calls_refused > 0

    # The index comes back: the next write replays what is pending, with no operator.
    flaky.failure = None
    clock.now += 31
    assert post(any_api, "/facts", {"text": "I work at a bakery."}).status == 200
    assert runtime.store.pending_projections == 0
    found = post(any_api, "/query", {"query": "Lisbon", "mode": "bm25"})
    assert found.status == 200 and DEGRADED not in found.headers
    assert turn_id in {h["id"] for h in found.json()["hits"]}
    fado = post(any_api, "/query", {"query": "fado", "mode": "bm25", "include": ["turn"]}).json()
    assert any("fado" in h["text"] for h in fado["hits"])
    assert post(any_api, "/forget", {"query": "Lisbon", "dryRun": True}).status == 200
