"""A small LRU of single-text embeddings in front of any ``Embedder``.

Why: one retrieval runs several vector legs over the same query text (the whole context,
then each entity the query names), and the search index embeds the query on every call.
With a remote embedder (OpenAI, Bedrock) each of those would be a network round trip;
with MiniLM, several milliseconds. Only calls with exactly one text are cached (queries);
batches (projection of written records) pass straight through.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from agent_memory.ports import Embedder

MIN_PART = 8  # a cached text shorter than this is never taken for a part of an erased one


class QueryCachingEmbedder:
    """Transparent wrapper: same ``name`` and ``dimension`` as ``inner``."""

    def __init__(self, inner: Embedder, size: int = 256):
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self._size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
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
        vector = np.asarray(self.inner.embed([text]), dtype=np.float32)
        with self._lock:
            self._cache[text] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector.copy()

    def forget_texts(self, texts: Sequence[str]) -> int:
        """Erasure: drop every cached text that holds one of ``texts``, or is a part of one (a
        retrieval query cut from a message; at least ``MIN_PART`` characters); how many went."""
        wanted = [t for t in texts if t]
        with self._lock:
            going = [q for q in self._cache
                     if any(t in q or (len(q.strip()) >= MIN_PART and q.strip() in t) for t in wanted)]
            for q in going:
                del self._cache[q]
        return len(going)

    def cached_hashes(self, hashes: set[str]) -> int:
        """How many cached queries are one of these SHA-256 hashes (a receipt's verify)."""
        import hashlib

        with self._lock:
            return sum(1 for q in self._cache if hashlib.sha256(q.encode("utf-8")).hexdigest() in hashes)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)
