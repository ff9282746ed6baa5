"""Query latency of the embedded search index (not a test).

Usage: python bench/search_latency.py [N ...]        (default: 700 10000 100000 1000000)

Builds an EmbeddedSearchIndex in a temporary directory with N synthetic units in one context
(Zipf-distributed vocabulary, mixed kinds/roles/sessions, scoped and reader-listed units,
some closed validity windows), then runs ~200 queries per mode with a realistic filter
(read region, principals, "current", 10 excluded ids) and prints p50/p95 in milliseconds
(``hybrid``: both legs through ``rank_rows``, fused by ``agent_memory.ranking.search``):
wall clock, and the searching thread's CPU time (what the wall time would be on an otherwise
idle machine, as long as BLAS runs the matrix-vector product on that thread).
Uses HashingEmbedder from agent_memory.adapters.embedders when present, else an inline
feature-hashing embedder of the same dimension.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
from agent_memory.ports import SearchFilter, SearchUnit
from agent_memory.ranking.recipes import RECIPES
from agent_memory.ranking.search import search as ranked_search

QUERIES = 200
BATCH = 2000
DIM = 256


class _InlineHashingEmbedder:
    """Fallback when agent_memory.adapters.embedders is not available."""

    name = "bench/hashing"
    dimension = DIM

    def embed(self, texts):
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                h = hashlib.blake2b(w.encode(), digest_size=8).digest()
                out[i, int.from_bytes(h[:4], "little") % DIM] += 1.0 if h[4] & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


def make_embedder():
    try:
        from agent_memory.adapters.embedders import HashingEmbedder
    except ImportError:
        return _InlineHashingEmbedder(), "inline hashing"
    return HashingEmbedder(dimension=DIM), "agent_memory HashingEmbedder"


def synthetic_units(n: int, rng: np.random.Generator) -> list[SearchUnit]:
    vocab = np.array([f"w{i}" for i in range(20_000)])
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()
    kinds = ["turn", "turn", "turn", "attribute", "relation", "chunk"]
    scopes = [[], [], [], [["org/acme"]], [["org/acme/user/alice"]], [["org/other"]], [["org/acme", "org/beta"]]]
    readers = [None] * 8 + [[], ["alice"], ["group:eng"]]
    units = []
    for i in range(n):
        words = rng.choice(vocab, size=int(rng.integers(8, 30)), p=weights)
        kind = kinds[i % len(kinds)]
        units.append(SearchUnit(
            id=f"u{i:07d}", context_id="bench", kind=kind, text=" ".join(words),
            role=("user" if i % 2 else "assistant") if kind == "turn" else None,
            session_id=f"sess_{i % 50}", scopes=scopes[i % len(scopes)], acl_readers=readers[i % len(readers)],
            valid_until="2001-01-01T00:00:00Z" if i % 17 == 0 else None,
            labels=["important"] if i % 9 == 0 else [],
        ))
    return units, vocab, weights


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.array(values), p))


def run(n: int) -> None:
    rng = np.random.default_rng(42)
    embedder, label = make_embedder()
    units, vocab, weights = synthetic_units(n, rng)
    with tempfile.TemporaryDirectory() as tmp:
        index = EmbeddedSearchIndex(Path(tmp) / "bench.sqlite", embedder)
        t0 = time.perf_counter()
        for start in range(0, n, BATCH):
            index.upsert(units[start : start + BATCH])
        load_s = time.perf_counter() - t0
        index.close()
        index = EmbeddedSearchIndex(Path(tmp) / "bench.sqlite", embedder)  # cold: view loads lazily
        queries = [" ".join(rng.choice(vocab[:5000], size=int(rng.integers(2, 7)), p=weights[:5000] / weights[:5000].sum()))
                   for _ in range(QUERIES)]
        excluded = [u.id for u in rng.choice(units, size=10)]
        flt = SearchFilter(context_id="bench", read_region=["org/acme"], principals=["alice"], exclude_ids=excluded)
        t0 = time.perf_counter()
        index.search(queries[0], flt, k=10, mode="vector")
        first_ms = (time.perf_counter() - t0) * 1000
        print(f"N={n:,} embedder={label} dim={DIM} load={load_s:.1f}s ({n / load_s:,.0f} units/s) "
              f"first query incl. lazy view load={first_ms:.0f} ms")
        for mode in ("bm25", "vector", "hybrid"):
            wall, cpu = [], []
            for q in queries:
                t0, c0 = time.perf_counter(), time.thread_time()
                hits = (ranked_search(index, q, flt, RECIPES["rrf"], k=10) if mode == "hybrid"
                        else index.search(q, flt, k=10, mode=mode))
                wall.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.thread_time() - c0) * 1000)
                assert len(hits) <= 10
            print(f"  N={n:>7,} mode={mode:<6} wall p50={pct(wall, 50):6.1f} ms  p95={pct(wall, 95):6.1f} ms  "
                  f"max={max(wall):6.1f} ms | cpu p50={pct(cpu, 50):6.1f} ms  p95={pct(cpu, 95):6.1f} ms")
        index.close()


def main(argv: list[str]) -> None:
    for n in [int(a.replace("_", "")) for a in argv] or [700, 10_000, 100_000, 1_000_000]:
        run(n)


if __name__ == "__main__":
    main(sys.argv[1:])
