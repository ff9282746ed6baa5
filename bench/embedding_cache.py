"""An on-disk embedding cache for benchmark re-runs (bench only, never product code).

A LoCoMo run with a local sentence-transformers model spends most of its time embedding the
same turns, facts and questions again; ranking experiments only change what happens after.
``DiskCachingEmbedder`` wraps an embedder and keeps every vector it computes in a SQLite file
keyed by the embedder's ``name``, its ``dimension`` and the SHA-256 of the text, so a re-run
pays only for texts it has not seen. The default file is ``bench/results/embeddings.sqlite``
(``bench/results/`` is gitignored); ``AGENT_MEMORY_BENCH_EMBED_CACHE`` overrides it, and the
value ``off`` switches the cache off.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_PATH = Path(__file__).resolve().parent / "results" / "embeddings.sqlite"


def cache_path() -> Path | None:
    value = os.environ.get("AGENT_MEMORY_BENCH_EMBED_CACHE", "")
    if value.lower() == "off":
        return None
    return Path(value) if value else DEFAULT_PATH


class DiskCachingEmbedder:
    """Transparent wrapper: same ``name`` and ``dimension`` as ``inner``; vectors come back
    bit-identical to what ``inner`` returned the first time."""

    def __init__(self, inner: Any, path: Path):
        self.inner = inner
        self.name = inner.name
        self.dimension = int(inner.dimension)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, digest BLOB, vector BLOB, "
                         "PRIMARY KEY (model, digest))")
        self._model = f"{self.name}#{self.dimension}"
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        digests = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            unique = list(dict.fromkeys(digests))
            for start in range(0, len(unique), 500):
                chunk = unique[start:start + 500]
                rows = self._db.execute(
                    f"SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({','.join('?' * len(chunk))})",
                    [self._model, *chunk]).fetchall()
                found.update((bytes(d), np.frombuffer(v, dtype=np.float32)) for d, v in rows)
        missing = [i for i, d in enumerate(digests) if d not in found]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            todo: dict[bytes, str] = {}
            for i in missing:
                todo.setdefault(digests[i], texts[i])
            vectors = np.asarray(self.inner.embed(list(todo.values())), dtype=np.float32)
            new = dict(zip(todo, vectors, strict=True))
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                     [(self._model, d, v.tobytes()) for d, v in new.items()])
                self._db.commit()
            found.update(new)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, d in enumerate(digests):
            out[i] = found[d]
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
