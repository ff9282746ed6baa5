"""The search circuit breaker (injected clock) and the OpenSearch adapter's mapping of
transport failures to ``SearchUnavailable``."""

from __future__ import annotations

import pytest
from opensearchpy import exceptions as ose

from agent_memory.adapters.embedders import HashingEmbedder
from agent_memory.adapters.opensearch.client import search_failure
from agent_memory.adapters.opensearch.index import OpenSearchIndex
from agent_memory.adapters.search_breaker import CircuitBreakingSearchIndex
from agent_memory.ports import SearchFilter, SearchUnavailable

FAILURES = {
    "refused": ose.ConnectionError("N/A", "connection refused", OSError("refused")),
    "timeout": ose.ConnectionTimeout("TIMEOUT", "read timed out", None),
    "server-error": ose.TransportError(503, "service_unavailable", {}),
    "throttled": ose.TransportError(429, "too_many_requests", {}),
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Index:
    """Fails with ``SearchUnavailable`` while ``down``; counts the calls that reach it."""

    def __init__(self) -> None:
        self.down = True
        self.calls = 0

    def get(self, context_id: str, unit_id: str):
        self.calls += 1
        if self.down:
            raise SearchUnavailable("refused")
        return None


def test_breaker_opens_after_consecutive_failures_and_stops_calling():
    index, clock = Index(), Clock()
    breaker = CircuitBreakingSearchIndex(index, failures_to_open=3, cool_down_s=30, clock=clock)
    for _ in range(3):
        with pytest.raises(SearchUnavailable):
            breaker.get("c", "u")
    assert index.calls == 3 and breaker.is_open
    for _ in range(10):
        with pytest.raises(SearchUnavailable) as refused:
            breaker.get("c", "u")
        assert refused.value.reason == "circuit-open"
    assert index.calls == 3 and breaker.calls_refused == 10
    assert refused.value.retry_after == 30


def test_breaker_probes_after_the_cool_down_and_closes_on_success():
    index, clock = Index(), Clock()
    breaker = CircuitBreakingSearchIndex(index, failures_to_open=2, cool_down_s=30, clock=clock)
    for _ in range(2):
        with pytest.raises(SearchUnavailable):
            breaker.get("c", "u")
    clock.now += 29
    with pytest.raises(SearchUnavailable):
        breaker.get("c", "u")
    assert index.calls == 2
    clock.now += 2  # past the cool-down: one probe; still down, so open again at once
    with pytest.raises(SearchUnavailable) as probe:
        breaker.get("c", "u")
    assert probe.value.reason == "refused" and index.calls == 3 and breaker.is_open
    clock.now += 31
    index.down = False
    assert breaker.get("c", "u") is None
    assert not breaker.is_open and index.calls == 4
    assert breaker.get("c", "u") is None and index.calls == 5


def test_a_success_resets_the_failure_count():
    index, clock = Index(), Clock()
    breaker = CircuitBreakingSearchIndex(index, failures_to_open=2, cool_down_s=30, clock=clock)
    with pytest.raises(SearchUnavailable):
        breaker.get("c", "u")
    index.down = False
    breaker.get("c", "u")
    index.down = True
    with pytest.raises(SearchUnavailable):
        breaker.get("c", "u")
    assert not breaker.is_open


def test_errors_other_than_unavailable_do_not_count():
    class Broken(Index):
        def get(self, context_id, unit_id):
            self.calls += 1
            raise ValueError("a bug, not an outage")

    index = Broken()
    breaker = CircuitBreakingSearchIndex(index, failures_to_open=1, clock=Clock())
    for _ in range(3):
        with pytest.raises(ValueError):
            breaker.get("c", "u")
    assert index.calls == 3 and not breaker.is_open


def test_unguarded_attributes_pass_through():
    index = Index()
    index.index_name = "units"
    assert CircuitBreakingSearchIndex(index).index_name == "units"


@pytest.mark.parametrize("reason", sorted(FAILURES))
def test_opensearch_transport_failures_raise_search_unavailable(reason):
    class Client:
        """Every request (``client.search``, ``client.indices.exists``...) fails."""

        def __getattr__(self, name):
            return Client()

        def __call__(self, *args, **kwargs):
            raise FAILURES[reason]

    index = OpenSearchIndex("http://localhost:9", "units", HashingEmbedder(16), service="es", client=Client())
    for call in (lambda: index.get("c", "u"), lambda: index.search("q", SearchFilter(context_id="c"), mode="bm25"),
                 lambda: index.delete("c", ["u"])):
        with pytest.raises(SearchUnavailable) as raised:
            call()
        assert raised.value.reason == reason


def test_a_bad_request_is_not_an_outage():
    assert search_failure(ose.RequestError(400, "parsing_exception", {})) is None
    assert search_failure(ValueError("x")) is None
