"""A small LRU of single-text embeddings in front of any ``Embedder``.

Why: one retrieval runs several vector legs over the same query text (the whole context,
then each entity the query names), and the search index embeds the query on every call.
With a remote embedder (OpenAI, Bedrock) each of those would be a network round trip;
with MiniLM, several milliseconds. Only calls with exactly one text are cached (queries);
batches (projection of written records) pass straight through.

``embed_ahead`` starts a query's embedding on a worker thread when the model is remote
(``inner.remote``: OpenAI, Bedrock), so retrieval's store reads run while the request is on
the network; the ``embed`` call that wants the vector then waits for it instead of asking
again. A local model is left on the caller's thread: MiniLM through ONNX Runtime is compute,
and started ahead on the 2-core bench machine it made searches 0.4 ms slower at p50, not
faster (docs/benchmarks.md "The query embedded ahead").
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from agent_memory.ports import Embedder

MIN_PART = 8  # a cached text shorter than this is never taken for a part of an erased one
MAX_AHEAD = 32  # embeddings started ahead and not yet asked for; past this, none is started


class QueryCachingEmbedder:
    """Transparent wrapper: same ``name`` and ``dimension`` as ``inner``."""

    def __init__(self, inner: Embedder, size: int = 256):
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self._size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._ahead: dict[str, Future[np.ndarray]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) != 1:
            return self.inner.embed(texts)
        text = texts[0]
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit.copy()
            ahead = self._ahead.pop(text, None)
        vector = None
        if ahead is not None:
            try:
                vector = ahead.result()
            except Exception:  # noqa: BLE001 - embedded again below, where its error is the caller's
                vector = None
        if vector is None:
            vector = np.asarray(self.inner.embed([text]), dtype=np.float32)
        self._keep(text, vector)
        return vector.copy()

    def embed_ahead(self, text: str) -> None:
        """Start embedding ``text`` on the worker thread (a remote model only) unless it is
        cached or under way; the next ``embed([text])`` takes the result. A failure is not raised here: that ``embed``
        runs the model again and raises it."""
        if not getattr(self.inner, "remote", False):
            return
        with self._lock:
            if not text or text in self._cache or text in self._ahead or len(self._ahead) >= MAX_AHEAD:
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="query-embed")
            # In a copy of the caller's context: its deadline and trace follow the call.
            try:
                future = self._pool.submit(contextvars.copy_context().run, self._embed_one, text)
            except RuntimeError:  # the interpreter is shutting down: the caller embeds it
                return
            self._ahead[text] = future
        future.add_done_callback(lambda done: self._landed(text, done))

    def close(self) -> None:
        """Stop the worker thread once what it runs has ended (``Runtime.close``); a later
        ``embed_ahead`` starts a new one."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _embed_one(self, text: str) -> np.ndarray:
        return np.asarray(self.inner.embed([text]), dtype=np.float32)

    def _landed(self, text: str, done: Future[np.ndarray]) -> None:
        """An embedding started ahead ended: cached when nobody took it meanwhile (a retrieval
        that stopped before its vector legs), so ``_ahead`` holds only what is under way."""
        with self._lock:
            if self._ahead.get(text) is not done:
                return  # taken by ``embed``, or erased
            del self._ahead[text]
            if done.exception() is not None:
                return
            self._cache[text] = done.result()
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)

    def _keep(self, text: str, vector: np.ndarray) -> None:
        with self._lock:
            self._cache[text] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)

    def forget_texts(self, texts: Sequence[str]) -> int:
        """Erasure: drop every cached text that holds one of ``texts``, or is a part of one (a
        retrieval query cut from a message; at least ``MIN_PART`` characters); how many went."""
        wanted = [t for t in texts if t]
        with self._lock:
            going = [q for q in self._cache
                     if any(t in q or (len(q.strip()) >= MIN_PART and q.strip() in t) for t in wanted)]
            for q in going:
                del self._cache[q]
            # An embedding under way for an erased text is dropped with it (never cached).
            for q in [q for q in self._ahead
                      if any(t in q or (len(q.strip()) >= MIN_PART and q.strip() in t) for t in wanted)]:
                del self._ahead[q]
        return len(going)

    def cached_hashes(self, hashes: set[str]) -> int:
        """How many cached queries are one of these SHA-256 hashes (a receipt's verify)."""
        import hashlib

        with self._lock:
            return sum(1 for q in self._cache if hashlib.sha256(q.encode("utf-8")).hexdigest() in hashes)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)
