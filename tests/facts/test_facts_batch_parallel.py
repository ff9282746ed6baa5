"""/facts/batch extracts its user messages in parallel (``limits.document_concurrency`` calls
at once, observed from the slow fake model's side) and still writes nothing when one call
fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.config import load_settings
from agent_memory.kernel import storage_keys as keys
from agent_memory.runtime import Runtime, set_runtime
from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer
from tests.conftest import TEST_SECRET, InProcessApi

pytestmark = pytest.mark.http

CHAT = "/v1/chat/completions"
RC = RequestContext(context_id="acme", principal="local-admin", admin=True)


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(Behaviour(latency_ms=40, jitter_ms=10, seed=5)) as server:
        yield server


@pytest.fixture
def rt(tmp_path: Path, fake: FakeOpenAIServer) -> Iterator[Runtime]:
    runtime = Runtime(load_settings(env={
        "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": TEST_SECRET,
        "OPENAI_BASE_URL": fake.url, "AGENT_MEMORY_MODELS_EXTRACTION": "openai/fake-extract",
        "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat", "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1",
        "AGENT_MEMORY_LIMITS_DOCUMENT_CONCURRENCY": "4"}))
    set_runtime(runtime)
    yield runtime
    set_runtime(None)


def batch(n: int) -> dict:
    messages = []
    for i in range(n):
        messages += [{"role": "user", "content": f"My colleague Person{i} lives in City{i}."},
                     {"role": "assistant", "content": "Noted."}]
    return {"messages": messages}


def test_batch_extraction_runs_in_parallel_up_to_the_setting_and_commits_in_order(rt, fake):
    r = InProcessApi().post("/api/v1/acme/facts/batch", batch(12))
    assert r.status == 200, r.text
    assert fake.stats.by_path[CHAT] == 12  # user turns only
    assert 2 <= fake.stats.max_in_flight[CHAT] <= 4
    body = r.json()
    assert len(body["turnIds"]) == 24
    assert [e is None for e in body["extractions"]] == [False, True] * 12  # each result at its message
    assert any(r.data.get("value") == "City11"
               for r in rt.store.query(keys.attrs_pk(RC, "entity:person/person11"), limit=50).records)


def test_one_failed_call_fails_the_batch_and_writes_nothing(rt, fake):
    fake.behaviour.failure_rate = 1.0
    r = InProcessApi().post("/api/v1/acme/facts/batch", batch(6))
    assert r.status == 502, r.text
    assert rt.store.query(keys.entities_pk(RC), limit=10).records == []
