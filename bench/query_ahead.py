"""Search latency with the query's embedding started ahead of retrieval's store reads
(``QueryCachingEmbedder.embed_ahead``) and without, interleaved question by question.

Usage: python bench/query_ahead.py [LOCOMO_DIR] [--embedder minilm|hashing] [--network-ms N] [--keep DIR]

The product's retrieval (k=10) over LoCoMo as ``bench/locomo.py`` ingests it (``--keep``
reuses that command's kept ingest). Each question runs twice, once each way, in alternating
order, with the query cache emptied before each run so both embed. ``--network-ms`` adds that
wait to every single-text embedding call (a stand-in for a remote model's round trip, where
the worker thread waits instead of computing). Prints p50 / p95 / mean for each way.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "shared"))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("AGENT_MEMORY_BENCH_EMBED_CACHE", "off")  # every query reaches the model

import locomo  # noqa: E402
import numpy as np  # noqa: E402


class Waiting:
    """``inner`` with ``network_ms`` of waiting on every single-text call."""

    def __init__(self, inner, network_ms: float):
        self.inner, self.network_s = inner, network_ms / 1000
        self.name, self.dimension = inner.name, inner.dimension

    def embed(self, texts):
        if len(texts) == 1 and self.network_s:
            time.sleep(self.network_s)
        return self.inner.embed(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, nargs="?", default=REPO / ".locomo")
    parser.add_argument("--embedder", choices=sorted(locomo.EMBEDDERS), default="minilm")
    parser.add_argument("--network-ms", type=float, default=0.0)
    parser.add_argument("--keep", type=Path, default=None, help="bench/locomo.py's --keep directory")
    args = parser.parse_args()

    from agent_memory.access.request_context import RequestContext

    data = (args.keep / f"{args.embedder}-product") if args.keep else Path(os.environ.get("TMPDIR", "/tmp")) / "query-ahead"
    data.mkdir(parents=True, exist_ok=True)
    runtime = locomo.make_runtime(data, args.embedder)
    cache = runtime.embedder
    contexts = []
    for conv in locomo.load_dir(args.directory, None):
        ctx = RequestContext(context_id=f"locomo-{conv.name}", principal="bench", admin=True)
        locomo.kept_ingest(runtime, ctx, conv, data)
        contexts.append((ctx, conv))
    cache.inner = Waiting(cache.inner, args.network_ms)
    took: dict[str, list[float]] = {"ahead": [], "inline": []}
    for n, (ctx, question) in enumerate((ctx, q.question) for ctx, conv in contexts for q in conv.questions):
        for way in (("ahead", "inline") if n % 2 else ("inline", "ahead")):
            cache._cache.clear()
            cache.inner.remote = way == "ahead"  # embed_ahead starts a remote model's call only
            started = time.perf_counter()
            runtime.retrieval.retrieve(ctx, question, k=10)
            took[way].append((time.perf_counter() - started) * 1000)
    print(f"{args.embedder}, network wait {args.network_ms:g} ms, {len(took['ahead'])} questions")
    for way, values in took.items():
        print(f"  {way:7s} p50 {np.percentile(values, 50):6.2f} ms  p95 {np.percentile(values, 95):6.2f} ms  "
              f"mean {np.mean(values):6.2f} ms")


if __name__ == "__main__":
    main()
