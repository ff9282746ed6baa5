"""Vector search of the embedded index at large sizes: the ANN graph (faiss HNSW) against
the exact scan, on the same index and queries (not a test).

Usage: python bench/ann_latency.py [N ...]        (default: 100000; 1000000 is a long run)

Units are N turns in one context whose 384-d unit vectors are clustered like sentence
embeddings (2,000 centres, Gaussian spread; the hashing embedder's near-orthogonal vectors
have no neighbourhoods for any ANN method to find, so they would measure nothing useful).
Queries are perturbed copies of 300 random units. The filter is a realistic caller's: a read
region that 80% of units are in, "current" validity, 10 excluded ids. Prints, per path,
p50/p95 of wall and thread CPU time for ``search(mode="vector", k=10)``, recall@10 of the
graph against the exact scan, the graph's build time and size on disk, and the process's
peak RSS.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agent_memory.adapters.embedded import ann
from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
from agent_memory.ports import SearchFilter, SearchUnit

DIM = 384
QUERIES = 300
BATCH = 5000


class TableEmbedder:
    """``"v<i>"`` -> row i of a clustered table; ``"q<i>"`` -> query i."""

    name = "bench/clustered-384"
    dimension = DIM

    def __init__(self, n: int, rng: np.random.Generator):
        centres = rng.normal(size=(2000, DIM)).astype(np.float32)
        table = centres[rng.integers(0, 2000, size=n)] + 0.5 * rng.normal(size=(n, DIM)).astype(np.float32)
        self.table = table / np.linalg.norm(table, axis=1, keepdims=True)
        picks = rng.integers(0, n, size=QUERIES)
        queries = self.table[picks] + 0.05 * rng.normal(size=(QUERIES, DIM)).astype(np.float32)
        self.queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)

    def embed(self, texts):
        return np.stack([self.table[int(t[1:])] if t[0] == "v" else self.queries[int(t[1:])] for t in texts])


def pct(values, p):
    return float(np.percentile(np.asarray(values), p))


def timed(index, flt):
    wall, cpu, results = [], [], []
    for i in range(QUERIES):
        t0, c0 = time.perf_counter(), time.thread_time()
        hits = index.search(f"q{i}", flt, k=10, mode="vector")
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
        results.append({h.unit.id for h in hits})
    return wall, cpu, results


def run(n: int) -> None:
    rng = np.random.default_rng(11)
    emb = TableEmbedder(n, rng)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ann.sqlite"
        index = EmbeddedSearchIndex(path, emb, ann_min_rows=n + 1)  # exact while loading
        t0 = time.perf_counter()
        for start in range(0, n, BATCH):
            index.upsert([SearchUnit(id=f"u{i}", context_id="bench", kind="turn", text=f"v{i}", role="user",
                                     scopes=[["org/acme"]] if i % 5 else [["org/other"]])
                          for i in range(start, min(n, start + BATCH))])
            if n >= 500_000 and (start + BATCH) % 100_000 == 0:  # a long run says how far it got
                print(f"  loaded {start + BATCH:,} units, {time.perf_counter() - t0:.0f}s", flush=True)
        load_s = time.perf_counter() - t0
        flt = SearchFilter(context_id="bench", read_region=["org/acme"], principals=["alice"],
                           exclude_ids=[f"u{i}" for i in range(10)])
        print(f"  index loaded in {time.perf_counter() - t0:.0f}s", flush=True)
        index.search("q0", flt, k=10, mode="vector")  # load the view
        ex_wall, ex_cpu, exact = timed(index, flt)
        index._vectors.min_rows = 0  # noqa: SLF001 - bench: search through the graph from now on
        t0 = time.perf_counter()
        index.search("q0", flt, k=10, mode="vector")  # builds (and saves) the graph
        build_s = time.perf_counter() - t0
        print(f"  graph built in {build_s:.0f}s", flush=True)
        ann_wall, ann_cpu, approx = timed(index, flt)
        recall = sum(len(a & e) for a, e in zip(approx, exact, strict=True)) / sum(len(e) for e in exact)
        graph = index._vectors.graph_path("bench")  # noqa: SLF001 - bench: size on disk
        disk = sum(os.path.getsize(graph + s) for s in ("", ".pks.npy")) / 2**20
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"N={n:,} dim={DIM} (index load {load_s:.0f}s; graph build {build_s:.1f}s, {disk:.0f} MiB on disk; "
              f"peak RSS {rss:.0f} MiB)")
        print(f"  exact scan  wall p50={pct(ex_wall, 50):6.2f} ms p95={pct(ex_wall, 95):6.2f} ms | "
              f"cpu p50={pct(ex_cpu, 50):6.2f} ms p95={pct(ex_cpu, 95):6.2f} ms")
        print(f"  ANN (HNSW)  wall p50={pct(ann_wall, 50):6.2f} ms p95={pct(ann_wall, 95):6.2f} ms | "
              f"cpu p50={pct(ann_cpu, 50):6.2f} ms p95={pct(ann_cpu, 95):6.2f} ms | recall@10 vs exact {recall:.4f}")
        # A wider beam's floor (``ann.EF_SEARCH_MIN``) against recall, on the same graph.
        default_ef = ann.EF_SEARCH_MIN
        for ef in (2048,):
            ann.EF_SEARCH_MIN = ef
            wall, cpu, approx = timed(index, flt)
            recall = sum(len(a & e) for a, e in zip(approx, exact, strict=True)) / sum(len(e) for e in exact)
            print(f"  ANN, EF_SEARCH_MIN={ef}: wall p50={pct(wall, 50):6.2f} ms p95={pct(wall, 95):6.2f} ms | "
                  f"cpu p50={pct(cpu, 50):6.2f} ms p95={pct(cpu, 95):6.2f} ms | recall@10 vs exact {recall:.4f}", flush=True)
        ann.EF_SEARCH_MIN = default_ef
        index.close()


def main(argv: list[str]) -> None:
    for n in [int(a.replace("_", "")) for a in argv] or [100_000]:
        run(n)


if __name__ == "__main__":
    main(sys.argv[1:])
