"""The query embedding cache (``adapters/query_cache.py``): single texts cached, and a query's
embedding started ahead on a worker thread (``embed_ahead``) taken by the ``embed`` that
wants it, through retrieval (``ports.QueryPrefetch``) as well."""

from __future__ import annotations

import contextvars
import threading

import numpy as np
import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.adapters import query_cache
from agent_memory.adapters.embedders import HashingEmbedder
from agent_memory.adapters.query_cache import QueryCachingEmbedder
from agent_memory.models.requests import WriteFactsRequest

CALLER = contextvars.ContextVar("caller", default=None)


class Recording:
    """A hashing embedder that records each call's texts, thread and ``CALLER``, and can be
    held (``gate``) or made to fail (``failures``)."""

    remote = True

    def __init__(self, failures: int = 0):
        self.inner = HashingEmbedder(dimension=64)
        self.name, self.dimension = self.inner.name, self.inner.dimension
        self.calls: list[tuple[list[str], str, object]] = []
        self.threads: list[threading.Thread] = []
        self.gate = threading.Event()
        self.gate.set()
        self.failures = failures

    def embed(self, texts):
        self.calls.append((list(texts), threading.current_thread().name, CALLER.get()))
        self.threads.append(threading.current_thread())
        assert self.gate.wait(10)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("model refused")
        return self.inner.embed(texts)


def test_a_query_started_ahead_is_embedded_once_on_the_worker_and_taken_by_embed():
    inner = Recording()
    cache = QueryCachingEmbedder(inner)
    CALLER.set("request-1")
    cache.embed_ahead("where does alice live")
    vector = cache.embed(["where does alice live"])
    assert np.allclose(vector, inner.inner.embed(["where does alice live"]))
    [(texts, thread, caller)] = inner.calls
    assert texts == ["where does alice live"] and thread.startswith("query-embed")
    assert caller == "request-1"  # the caller's context (deadline, trace) followed the call
    cache.embed(["where does alice live"])
    cache.embed_ahead("where does alice live")  # cached: nothing starts
    assert len(inner.calls) == 1


def test_an_embedding_nobody_took_is_cached_when_it_lands():
    inner = Recording()
    cache = QueryCachingEmbedder(inner)
    cache.embed_ahead("a question whose search stopped early")
    for _ in range(500):  # the done-callback runs right after the result is set
        if not cache._ahead:
            break
        threading.Event().wait(0.01)
    assert not cache._ahead
    cache.embed(["a question whose search stopped early"])
    assert len(inner.calls) == 1


def test_a_failed_embedding_ahead_is_run_again_by_embed_which_raises_its_own_error():
    inner = Recording(failures=1)
    cache = QueryCachingEmbedder(inner)
    cache.embed_ahead("q one")
    assert cache.embed(["q one"]).shape == (1, 64)  # the ahead call failed; embed ran it again
    assert len(inner.calls) == 2
    inner.failures = 2
    cache.embed_ahead("q two")
    with pytest.raises(RuntimeError, match="model refused"):
        cache.embed(["q two"])


def test_erasing_a_text_drops_its_embedding_under_way():
    inner = Recording()
    inner.gate.clear()
    cache = QueryCachingEmbedder(inner)
    cache.embed_ahead("what is my passport number 1234")
    future = cache._ahead["what is my passport number 1234"]
    assert cache.forget_texts(["my passport number 1234"]) == 0  # nothing cached yet ...
    inner.gate.set()
    future.result(10)
    assert cache._cache == {} and not cache._ahead  # ... and what lands is not kept
    cache.embed(["what is my passport number 1234"])
    assert len(inner.calls) == 2


def test_embeddings_ahead_are_bounded(monkeypatch):
    monkeypatch.setattr(query_cache, "MAX_AHEAD", 2)
    inner = Recording()
    inner.gate.clear()
    cache = QueryCachingEmbedder(inner)
    for text in ("one", "two", "three"):
        cache.embed_ahead(text)
    assert sorted(cache._ahead) == ["one", "two"]
    inner.gate.set()
    assert cache.embed(["three"]).shape == (1, 64)  # not started ahead: embedded by the caller


def test_close_ends_the_worker_and_a_later_query_starts_another():
    inner = Recording()
    cache = QueryCachingEmbedder(inner)
    cache.embed_ahead("first")
    cache.embed(["first"])
    [worker] = inner.threads
    cache.close()
    assert not worker.is_alive() and cache._pool is None
    cache.embed_ahead("second")
    assert cache.embed(["second"]).shape == (1, 64)
    assert [(texts, thread.startswith("query-embed")) for texts, thread, _ in inner.calls] == \
        [(["first"], True), (["second"], True)]
    cache.close()


def test_a_local_model_embeds_on_the_callers_thread():
    inner = Recording()
    inner.remote = False
    cache = QueryCachingEmbedder(inner)
    cache.embed_ahead("how tall is the tower")
    assert not cache._ahead
    cache.embed(["how tall is the tower"])
    assert [thread for _, thread, _ in inner.calls] == [threading.current_thread().name]


def test_the_remote_embedders_say_so():
    from agent_memory.adapters.embedders import BedrockTitanEmbedder, LocalEmbedder, OpenAIEmbedder

    assert OpenAIEmbedder.remote and BedrockTitanEmbedder.remote
    assert not getattr(LocalEmbedder, "remote", False) and not getattr(HashingEmbedder, "remote", False)


def test_batches_and_empty_texts_are_never_started_ahead():
    inner = Recording()
    cache = QueryCachingEmbedder(inner)
    cache.embed_ahead("")
    assert not cache._ahead
    cache.embed(["a", "b"])
    cache.embed(["a", "b"])
    assert len(inner.calls) == 2  # batches pass through uncached


def test_retrieval_starts_the_vector_query_ahead_of_its_store_reads(runtime):
    """One retrieval: the query is embedded once, on the worker, with the text the vector
    legs ask for, while tier 1 reads the store on the caller's thread."""
    ctx = RequestContext(context_id="acme", principal="u", admin=True)
    assert runtime.retrieval is not None  # built before the embedder is swapped below
    cache = runtime.embedder
    seen: list[tuple[str, str]] = []
    inner = cache.inner

    class Watching:  # a remote model's stand-in
        name, dimension, remote = inner.name, inner.dimension, True

        def embed(self, texts):
            if len(texts) == 1:
                seen.append((texts[0], threading.current_thread().name))
            return inner.embed(texts)

    cache.inner = Watching()
    runtime.facts.write(ctx, WriteFactsRequest(text="Alice moved to Lisbon in May."))
    seen.clear()
    result = runtime.retrieval.retrieve(ctx, "Where did Alice move?", k=5)
    [(text, thread)] = seen  # the whole context's vector leg and Alice's share one embedding
    assert text == result.trace["vectorQuery"] and thread.startswith("query-embed")
    assert any("Lisbon" in h.text for h in result.hits)
