"""Request deadlines and load shedding, with the service's real ``openai`` adapters (through
the openai library and through the functions' thin client) talking to the fake model (``agent_memory.testing.fake_openai``) over loopback HTTP.

The fake model answers with the offline provider's logic, so extraction through it stores
real facts; its latency, failures and hangs drive the error paths: a model that hangs gives
a 504 problem within the request deadline, one that fails a 502, and either way the
request's in-flight slot is free again afterwards."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from agent_memory.config import load_settings
from agent_memory.http.api import request_budget_s
from agent_memory.kernel import deadline
from agent_memory.runtime import Runtime, set_runtime
from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer
from tests.conftest import REPO, TEST_SECRET, InProcessApi

CTX = "/api/v1/slowmodel"
DEADLINE_S = 3.0


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(Behaviour(latency_ms=20, jitter_ms=10, seed=7)) as fake:
        yield fake


@pytest.fixture(params=["library", "http"])
def fake_runtime(request: pytest.FixtureRequest, tmp_path: Path, fake_model: FakeOpenAIServer) -> Iterator[Runtime]:
    # Both OpenAI clients: the openai library (the local service) and the thin one (the functions).
    env = {"AGENT_MEMORY_OPENAI_CLIENT": request.param,"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": TEST_SECRET,
           "OPENAI_BASE_URL": fake_model.url, "AGENT_MEMORY_MODELS_EXTRACTION": "openai/fake-extract",
           "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat", "AGENT_MEMORY_MODELS_EMBEDDING": "openai/fake-embed",
           "AGENT_MEMORY_EMBEDDING_DIMENSIONS": "64",
           "AGENT_MEMORY_LIMITS_REQUEST_DEADLINE_S": str(DEADLINE_S)}
    settings = load_settings(env=env)
    rt = Runtime(settings)
    set_runtime(rt)
    # Warm up outside the timed path (first imports of openai and friends take seconds on a
    # loaded machine): one write and one chat with a generous deadline.
    rt.settings = replace(settings, limits=replace(settings.limits, request_deadline_s=120))
    warm = InProcessApi()
    assert warm.post("/api/v1/warmup/facts", {"text": "I live in Lisbon."}).status == 200
    assert warm.post("/api/v1/warmup/chat", {"message": "Where do I live?", "stream": True}).status == 200
    rt.settings = settings
    yield rt
    set_runtime(None)


@pytest.fixture
def http_api(fake_runtime: Runtime) -> Iterator[httpx.Client]:
    from agent_memory.http.local_server import make_server

    srv = make_server("127.0.0.1", 0, REPO)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{srv.server_port}", timeout=30) as client:
            yield client
    finally:
        srv.shutdown()
        srv.server_close()


def _idle(rt: Runtime) -> bool:
    """No in-flight slot is held (checked after the response; a slot goes in ``finally``)."""
    for _ in range(50):
        if rt.inflight._count == 0:
            return True
        time.sleep(0.02)
    return False


def test_facts_extracted_through_the_fake_model_are_stored(http_api, fake_runtime, fake_model):
    r = http_api.post(f"{CTX}/facts", json={"text": "I live in Lisbon and I work at Initech."})
    assert r.status_code == 200, r.text
    state = http_api.get(f"{CTX}/state").json()
    assert "Lisbon" in str(state) and "Initech" in str(state)
    assert fake_model.stats.by_path.get("/v1/chat/completions", 0) >= 1  # extraction went over HTTP
    assert fake_model.stats.by_path.get("/v1/embeddings", 0) >= 1  # and so did the projection's vectors


def test_batch_through_the_fake_model(http_api, fake_model):
    r = http_api.post(f"{CTX}/facts/batch", json={"messages": [
        {"role": "user", "content": "My sister Maria lives in Porto."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "I moved to Madrid."}]})
    assert r.status_code == 200, r.text
    assert len(r.json()["turnIds"]) == 3
    assert "Madrid" in str(http_api.get(f"{CTX}/state").json())


def test_chat_through_the_fake_model_cites_memory(http_api, fake_model):
    assert http_api.post(f"{CTX}/facts", json={"text": "I live in Lisbon."}).status_code == 200
    r = http_api.post(f"{CTX}/chat", json={"message": "Where do I live?", "bypassCache": True})
    assert r.status_code == 200, r.text
    assert "Lisbon" in r.json()["reply"] and r.json()["citations"]
    streamed = http_api.post(f"{CTX}/chat", json={"message": "Where do I live?", "stream": True,
                                                  "bypassCache": True})
    assert streamed.status_code == 200 and "Lisbon" in streamed.text and "event: done" in streamed.text


@pytest.mark.parametrize("path,body", [
    ("chat", {"message": "Where do I live?", "bypassCache": True}),
    ("facts", {"text": "I live in Lisbon."}),
    ("facts/batch", {"messages": [{"role": "user", "content": "I live in Lisbon."}]}),
])
def test_a_hanging_model_gives_504_within_the_deadline_and_frees_the_slot(http_api, fake_runtime, fake_model,
                                                                          path, body):
    fake_model.behaviour.hang_rate = 1.0
    started = time.monotonic()
    r = http_api.post(f"{CTX}/{path}", json=body)
    elapsed = time.monotonic() - started
    assert r.status_code == 504, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["status"] == 504
    assert elapsed < DEADLINE_S + 1.0
    assert _idle(fake_runtime)
    fake_model.behaviour.hang_rate = 0.0
    assert http_api.post(f"{CTX}/facts", json={"text": "I live in Porto.", "infer": "none"}).status_code == 200


def test_a_hanging_embeddings_call_on_a_read_is_504_not_500(http_api, fake_runtime, fake_model):
    assert http_api.post(f"{CTX}/facts", json={"text": "I live in Lisbon.", "infer": "none"}).status_code == 200
    fake_model.behaviour.hang_rate = 1.0
    r = http_api.post(f"{CTX}/query", json={"query": "which city was the last place I lived in"})
    assert r.status_code == 504, r.text
    assert _idle(fake_runtime)


def test_a_failing_model_gives_502(http_api, fake_runtime, fake_model):
    fake_model.behaviour.failure_rate = 1.0
    for path, body in (("chat", {"message": "hello", "bypassCache": True}), ("facts", {"text": "I live in Rome."})):
        r = http_api.post(f"{CTX}/{path}", json=body)
        assert r.status_code == 502, r.text
        assert r.json()["type"].endswith("/model-failed")
    assert _idle(fake_runtime)


def test_a_streamed_chat_whose_model_hangs_ends_with_a_504_error_frame(http_api, fake_runtime, fake_model):
    fake_model.behaviour.hang_rate = 1.0
    started = time.monotonic()
    r = http_api.post(f"{CTX}/chat", json={"message": "hello", "stream": True, "bypassCache": True})
    assert time.monotonic() - started < DEADLINE_S + 1.0
    if r.status_code == 200:  # the stream opened before the model was asked
        assert "event: error" in r.text and '"status": 504' in r.text
    else:
        assert r.status_code == 504
    assert _idle(fake_runtime)


def test_load_shedding_covers_every_route(http_api, fake_runtime, fake_model, monkeypatch):
    """One cap for the process: a /facts held by a slow model makes /query, /state and
    /sessions wait their turn with 503 + Retry-After."""
    monkeypatch.setattr(fake_runtime.inflight, "cap", 1)
    fake_model.behaviour.latency_ms = 1500
    holder = threading.Thread(target=lambda: http_api.post(f"{CTX}/facts", json={"text": "I live in Oslo."}))
    holder.start()
    for _ in range(100):
        if fake_runtime.inflight._count:
            break
        time.sleep(0.02)
    shed = [http_api.post(f"{CTX}/query", json={"query": "oslo"}), http_api.get(f"{CTX}/state"),
            http_api.post(f"{CTX}/sessions", json={})]
    holder.join(30)
    assert [r.status_code for r in shed] == [503, 503, 503]
    assert all(r.headers["retry-after"] == "1" and r.json()["code"] == "inflight_cap" for r in shed)
    fake_model.behaviour.latency_ms = 0
    assert _idle(fake_runtime)
    assert http_api.get(f"{CTX}/state").status_code == 200


def test_lambda_budget_is_the_remaining_time_less_the_margin(fake_runtime):
    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 2_000

    assert request_budget_s(Context()) == pytest.approx(2.0 - fake_runtime.settings.limits.deadline_margin_s)
    assert request_budget_s(None) == DEADLINE_S  # locally: the setting


def test_the_deadline_reaches_the_handler_in_process(fake_runtime, fake_model, monkeypatch):
    seen = {}
    inner = fake_runtime.facts.extract

    def spy(*args, **kw):
        seen["remaining"] = deadline.remaining()
        return inner(*args, **kw)

    monkeypatch.setattr(fake_runtime.facts, "extract", spy)
    r = InProcessApi().post(f"{CTX}/facts", {"text": "I live in Bern."})
    assert r.status == 200
    assert 0 < seen["remaining"] <= DEADLINE_S


def test_timeout_for_fits_the_deadline():
    assert deadline.timeout_for(30.0) == 30.0  # outside a request: the configured timeout
    with deadline.within(1.0):
        assert deadline.timeout_for(30.0) <= 1.0 - deadline.CALL_MARGIN_S + 0.01
        assert deadline.timeout_for(0.1) == 0.1
    with deadline.within(0.0), pytest.raises(deadline.DeadlineExceeded):
        deadline.timeout_for(30.0)


def test_a_write_that_reaches_its_commit_after_the_deadline_commits_nothing(fake_runtime, monkeypatch):
    """Past the deadline a write answers 503 and stores nothing: a client that was already
    told the request failed never finds it applied."""
    monkeypatch.setattr(fake_runtime, "settings", replace(
        fake_runtime.settings, limits=replace(fake_runtime.settings.limits, request_deadline_s=0.0)))
    r = InProcessApi().post(f"{CTX}/facts", {"text": "I live in Graz.", "infer": "none"})
    assert r.status == 503
    assert r.json()["type"].endswith("/deadline-exceeded") and r.headers["retry-after"] == "1"
    monkeypatch.undo()
    api = InProcessApi()
    assert api.post(f"{CTX}/facts", {"text": "I live in Linz.", "infer": "none"}).status == 200
    texts = [h["text"] for h in api.post(f"{CTX}/query", {"query": "I live in Graz Linz", "mode": "bm25"}).json()["hits"]]
    assert any("Linz" in t for t in texts) and not any("Graz" in t for t in texts)
    assert fake_runtime.inflight._count == 0
