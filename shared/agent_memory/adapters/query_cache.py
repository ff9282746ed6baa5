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

    def __getattr__(self, name: str):
        return getattr(self.inner, name)
