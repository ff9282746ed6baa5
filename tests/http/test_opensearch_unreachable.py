"""The service started with OpenSearch configured but unreachable (a closed port: every
request is refused), in process and over the local server, SQLite records: no route
answers 500; writes commit, reads degrade, forget refuses, and the breaker spares the
requests that follow the first failures."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.runtime import Runtime, set_runtime
from tests.conftest import make_settings

CTX = "/api/v1/acme"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    settings = dataclasses.replace(make_settings(tmp_path, "sqlite"), search="opensearch",
                                   opensearch_url=f"http://127.0.0.1:{closed_port()}",
                                   opensearch_service="es", opensearch_index="units")
    rt = Runtime(settings)
    set_runtime(rt)
    yield rt
    rt.close()
    set_runtime(None)


def test_no_route_answers_500_with_opensearch_unreachable(any_api, runtime):
    wrote = any_api.post(f"{CTX}/facts", {"text": "I live in Lisbon."})
    assert wrote.status == 200, wrote.text
    assert "Lisbon" in any_api.get(f"{CTX}/state").text  # the committed fact
    for path, body in (("/query", {"query": "Where do I live?"}), ("/context", {"query": "Where do I live?"}),
                       (f"/sessions/{wrote.json()['sessionId']}/context", {"query": "Where do I live?"}),
                       ("/chat", {"message": "Where do I live?"})):
        r = any_api.post(f"{CTX}{path}", body)
        assert r.status == 200, (path, r.text)
        assert r.headers.get("x-memory-degraded") == "search-unavailable", path
    # /query answers from what the store knows: the recent turn that shares a word with it
    recent = any_api.post(f"{CTX}/query", {"query": "Which city did I say Lisbon?"}).json()
    assert "I live in Lisbon." in [h["text"] for h in recent["hits"]], recent
    other = any_api.post(f"{CTX}/query", {"query": "gardening tools"}).json()
    assert "I live in Lisbon." not in [h["text"] for h in other["hits"]]
    refused = any_api.post(f"{CTX}/forget", {"query": "Lisbon"})
    assert refused.status == 503 and "retry-after" in refused.headers, refused.text
    assert "Lisbon" in any_api.get(f"{CTX}/state").text
    assert runtime.search.is_open and runtime.search.calls_refused > 0
    assert runtime.store.pending_projections >= 1
