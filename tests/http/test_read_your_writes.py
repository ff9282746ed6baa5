"""Read-your-writes with the local default: projection after the commit, batched, on a
background worker (SQLite store + embedded index). The embedder here is slow and held: the
projector's embedding waits until the test lets it go, so a write's unit is certainly not
searchable when its response returns. A read right after it still finds it (the read
waits for its context's pending projections, ``projection_wait_s``); past the bound the
read answers with what is searchable and its trace says so; the tier-2 response cache
never serves an answer computed before the unit became searchable."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_memory.adapters.embedders import HashingEmbedder
from agent_memory.client import AgentMemory
from agent_memory.runtime import Runtime, set_runtime
from tests.conftest import make_settings

CTX = "/api/v1/acme"


class HeldEmbedder(HashingEmbedder):
    """Embeds like ``hashing/v1``; the projector's calls wait for ``released`` (the request
    path's own calls, query embeddings, never wait)."""

    def __init__(self) -> None:
        super().__init__(384)
        self.released = threading.Event()
        self.released.set()
        self.projector_calls: list[int] = []
        self.entered = threading.Event()  # the projector is inside a call

    def embed(self, texts):
        if threading.current_thread().name == "projector":
            self.projector_calls.append(len(texts))
            self.entered.set()
            assert self.released.wait(30), "the test never released the projector"
        return super().embed(texts)

    def hold(self) -> None:
        self.released.clear()

    def release_after(self, seconds: float) -> None:
        timer = threading.Timer(seconds, self.released.set)
        timer.daemon = True
        timer.start()


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> HeldEmbedder:
    held = HeldEmbedder()
    monkeypatch.setattr("agent_memory.runtime.build_embedder", lambda settings: held)
    return held


@pytest.fixture
def runtime(tmp_path: Path, embedder: HeldEmbedder) -> Iterator[Runtime]:
    # The local server's defaults, the wait bound raised so a busy machine cannot pass it.
    settings = make_settings(tmp_path, "sqlite", projection="background", projection_wait_s=20.0, audit_usage="off")
    rt = Runtime(settings)
    set_runtime(rt)
    yield rt
    embedder.released.set()
    rt.close()
    set_runtime(None)


@pytest.fixture
def http(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=60) as client:
        yield client


def remember(http: httpx.Client, text: str) -> str:
    r = http.post(f"{CTX}/facts", json={"text": text, "infer": "none"})
    assert r.status_code == 200, r.text
    return r.json()["turnId"]


def texts(body: dict) -> list[str]:
    return [h["text"] for h in body["hits"]]


def test_a_query_right_after_a_write_finds_it_over_http(http, runtime, embedder):
    remember(http, "The spare key is under the blue flowerpot.")
    assert runtime.projector.drain(timeout_s=20)
    embedder.hold()
    turn_id = remember(http, "The boat is moored at pier nine.")
    assert runtime.projector.pending("acme") == 1  # answered before its unit is searchable
    embedder.release_after(0.3)
    body = http.post(f"{CTX}/query", json={"query": "where is the boat moored"}).json()
    assert turn_id in [h["id"] for h in body["hits"]], body
    assert "projectionPending" not in body["trace"]
    assert runtime.projector.pending("acme") == 0


def test_context_and_search_after_a_write_find_it_too(http, runtime, embedder):
    embedder.hold()
    remember(http, "Grandma's birthday is on the ninth of March.")
    embedder.release_after(0.2)
    r = http.post(f"{CTX}/context", json={"query": "when is grandma's birthday"})
    assert r.status_code == 200 and "ninth of March" in r.text, r.text


def test_past_the_bound_the_read_answers_with_what_is_searchable_and_says_so(http, runtime, embedder):
    runtime.projector.settle_s = 0.05
    embedder.hold()
    remember(http, "The boat is moored at pier nine.")
    body = http.post(f"{CTX}/query", json={"query": "where is the boat moored"}).json()
    assert body["hits"] == [] and body["trace"]["projectionPending"] is True
    embedder.released.set()
    assert runtime.projector.drain(timeout_s=20)
    body = http.post(f"{CTX}/query", json={"query": "where is the boat moored"}).json()
    assert "pier nine" in " ".join(texts(body)) and "projectionPending" not in body["trace"]


def test_a_burst_of_writes_is_embedded_in_one_call(http, runtime, embedder):
    embedder.hold()
    remember(http, "first of the burst")  # the worker takes this one and waits in the embedder
    assert embedder.entered.wait(20)
    for n in range(9):
        remember(http, f"burst turn number {n}")
    embedder.projector_calls.clear()
    embedder.released.set()
    assert runtime.projector.drain(timeout_s=20)
    assert embedder.projector_calls == [9]  # the nine queued meanwhile: one batch, one call


def test_the_sdk_finds_what_it_just_remembered(server, runtime, embedder):
    with AgentMemory("acme", base_url=server) as memory:
        embedder.hold()
        memory.remember("The library closes at six on Saturdays.", infer="none")
        embedder.release_after(0.2)
        hits = memory.query("when does the library close on Saturdays").hits
        assert any("six on Saturdays" in h.text for h in hits), hits


def test_a_thread_context_right_after_an_append_is_not_pending(http, runtime, embedder):
    for i in range(3):
        assert http.post(f"{CTX}/threads/ryw/turns", json={"text": f"earlier turn {i}"}).status_code == 201
    embedder.hold()
    assert http.post(f"{CTX}/threads/ryw/turns", json={"text": "the newest turn"}).status_code == 201
    embedder.release_after(0.2)
    r = http.post(f"{CTX}/threads/ryw/context", json={"query": "turn", "last_n_turns": 1})
    assert r.status_code == 200, r.text


def test_a_cached_answer_from_before_a_unit_became_searchable_is_not_served(http, runtime, embedder, model):
    """The tier-2 cache: a refusal cached while the statement's projection was pending is
    outdated when projection applies it (the write mark moves then, not only at commit)."""
    question = {"message": "What colour is my bicycle?"}
    runtime.projector.settle_s = 0.05
    embedder.hold()
    remember(http, "My bicycle is painted orange.")
    refusal = http.post(f"{CTX}/chat", json=question).json()  # computed while pending
    assert refusal["citations"] == [] and "orange" not in refusal["reply"]
    n = model.calls["complete"]
    assert http.post(f"{CTX}/chat", json=question).json()["reply"] == refusal["reply"]
    assert model.calls["complete"] == n  # served by the cache while the unit is still pending
    embedder.released.set()
    assert runtime.projector.drain(timeout_s=20)
    answered = http.post(f"{CTX}/chat", json=question).json()
    assert model.calls["complete"] == n + 1  # the cached refusal was not served
    assert "orange" in answered["reply"] and answered["citations"], answered


def test_the_writer_is_never_served_a_cached_answer_older_than_its_write(http, runtime, embedder, model):
    question = {"message": "What colour is my kayak?"}
    refusal = http.post(f"{CTX}/chat", json=question).json()
    assert refusal["citations"] == []
    embedder.hold()
    remember(http, "My kayak is bright yellow.")
    embedder.release_after(0.2)
    answered = http.post(f"{CTX}/chat", json=question).json()  # waits, then the mark has moved
    assert "yellow" in answered["reply"] and answered["citations"], answered


def test_an_answer_made_right_after_a_write_is_still_cached(http, runtime, embedder, model):
    """The chat awaits its context's pending projections before it takes its cache entry's id:
    the write mark they move when they become searchable precedes the entry, so the entry is
    served next time instead of being outdated by a write its own answer already saw."""
    question = {"message": "Where is my canoe stored?"}
    embedder.hold()
    remember(http, "My canoe is stored in the garden shed.")
    embedder.release_after(0.2)
    first = http.post(f"{CTX}/chat", json=question).json()
    assert "garden shed" in first["reply"], first
    n = model.calls["complete"]
    second = http.post(f"{CTX}/chat", json=question).json()
    assert model.calls["complete"] == n and second["reply"] == first["reply"]  # a tier-2 hit


def test_a_restart_indexes_what_a_crash_left_pending(tmp_path, runtime, embedder):
    """The process dies with background projections queued: their outbox rows committed with
    the records, so the next start indexes them before it serves (``agent-memory serve``
    opens the store at startup)."""
    from tests.conftest import InProcessApi

    api = InProcessApi()
    runtime.projector.pause()  # the worker never gets to it
    assert api.post(f"{CTX}/facts", {"text": "The lighthouse keeper is called Morag.", "infer": "none"}).status == 200
    assert runtime.store.pending_projections == 1
    restarted = Runtime(runtime.settings)
    set_runtime(restarted)
    try:
        _ = restarted.store  # what serve does before it listens
        assert restarted.store.pending_projections == 0
        restarted.projector.pause()  # nothing queued after the start: the index already has it
        body = api.post(f"{CTX}/query", {"query": "what is the lighthouse keeper called"}).json()
        assert "Morag" in " ".join(texts(body)) and "projectionPending" not in body["trace"], body
    finally:
        restarted.projector.resume()
        restarted.close()
        set_runtime(runtime)
        runtime.projector.resume()
