"""Search latency at LoCoMo size: ``RetrievalService.retrieve`` (hybrid, k=10) over every
LoCoMo question (categories 1-4), each in its conversation's context (about 700 units:
the turns plus the facts extraction stored), embedded store, hashing embedder. Not a test.

Usage::

    python bench/locomo_latency.py .locomo [--limit N] [--profile] [--repeat R]
                                   [--reranker none|minilm] [--evict-mb MB]

The query embedding is excluded: the index's embedder is wrapped with a timer and its time
is subtracted from each call (with the runtime's query cache a question is embedded once).
Prints p50/p95/max in milliseconds and, with ``--profile``, cProfile's top functions by
cumulative and by own time over all the timed calls.

``--evict-mb MB`` reads MB megabytes of unrelated memory before each question (untimed), so
every retrieval starts with cold CPU caches, as it does right after a model's pass (a local
MiniLM query embedding streams ~22 MB of weights): without it, question after question keeps
the context's arrays and the code cache-warm.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402


class TimedEmbedder:
    """Forwards to ``inner`` and adds up the seconds spent embedding."""

    def __init__(self, inner: Any):
        self.inner, self.name, self.dimension = inner, inner.name, inner.dimension
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    def embed(self, texts):
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t0
            self.cpu_seconds += time.thread_time() - c0

    def cpu_share(self, wall: float) -> float:
        """The embedding CPU time of the last call (``wall`` of it was wall-clock time)."""
        return self.cpu_seconds - self._cpu_before if wall else 0.0

    def mark(self) -> None:
        self._cpu_before = self.cpu_seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--repeat", type=int, default=1, help="run every question R times")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--infer", default="full", choices=["full", "none"])
    parser.add_argument("--evict-mb", type=int, default=0,
                        help="read this many MB of other memory before each question (cold caches)")
    parser.add_argument("--reranker", default="none", choices=sorted(locomo.RERANKERS),
                        help="models.reranker (minilm: late interaction; its time is included)")
    args = parser.parse_args(argv)
    import logging

    from agent_memory.access.request_context import RequestContext
    from agent_memory.models.requests import WriteFactsBatchRequest

    logging.getLogger("agent_memory").setLevel(logging.WARNING)
    conversations = locomo.load_dir(args.directory, args.limit)
    latencies: list[float] = []
    cpu: list[float] = []
    units: list[int] = []
    last_pass: list[float] = []  # with --repeat: the last pass's wall times (caches warm)
    profiler = cProfile.Profile() if args.profile else None
    evict = np.ones(args.evict_mb * 2**20 // 8) if args.evict_mb > 0 else None
    with tempfile.TemporaryDirectory(prefix="locomo-latency-") as tmp:
        rt = locomo.make_runtime(Path(tmp), "hashing", args.reranker)
        for conv in conversations:
            ctx = RequestContext(context_id=f"locomo-{conv.name}", principal="bench", admin=True)
            for session in conv.sessions:
                rt.facts.write_batch(ctx, WriteFactsBatchRequest(
                    messages=[{"content": t.text, "ts": session.observed_at, "speaker": t.speaker}
                              for t in session.turns], infer=args.infer))
            index = rt.search
            timer = TimedEmbedder(index.embedder)
            index.embedder = timer
            # Projection runs after the commit, on the index's worker: count once it is done,
            # under the index's lock (the worker writes through the same connection).
            while not rt.retrieval.await_projection(ctx.context_id):
                pass
            with index._lock:  # noqa: SLF001 - bench: count the context's units
                view = index._view(ctx.context_id)  # noqa: SLF001
                units.append(view.n - view.dead)
            rt.retrieval.retrieve(ctx, "warm up", k=10)
            for n in range(args.repeat):
                for q in conv.questions:
                    if evict is not None:
                        evict.sum()
                    before = timer.seconds
                    timer.mark()
                    t0, c0 = time.perf_counter(), time.thread_time()
                    if profiler is not None:
                        profiler.enable()
                    rt.retrieval.retrieve(ctx, q.question, k=10)
                    if profiler is not None:
                        profiler.disable()
                    embedding = timer.seconds - before
                    latencies.append((time.perf_counter() - t0 - embedding) * 1000)
                    if n == args.repeat - 1 and args.repeat > 1:
                        last_pass.append(latencies[-1])
                    cpu.append((time.thread_time() - c0 - timer.cpu_share(embedding)) * 1000)
            index.embedder = timer.inner
    arr = np.array(latencies)
    print(f"LoCoMo retrieval latency excluding the query embedding: {len(conversations)} conversations, "
          f"{int(np.mean(units))} units per context on average ({min(units)}-{max(units)}), "
          f"{len(arr)} calls (hybrid, k=10, hashing embedder, embedded store, reranker {args.reranker})")
    print(f"  wall p50 {np.percentile(arr, 50):.2f} ms   p95 {np.percentile(arr, 95):.2f} ms   max {arr.max():.2f} ms")
    c = np.array(cpu)
    print(f"  cpu  p50 {np.percentile(c, 50):.2f} ms   p95 {np.percentile(c, 95):.2f} ms   max {c.max():.2f} ms"
          "   (the calling thread's CPU time: wall time on an idle machine)")
    if last_pass:
        warm = np.array(last_pass)
        print(f"  last of {args.repeat} passes, wall p50 {np.percentile(warm, 50):.2f} ms   "
              f"p95 {np.percentile(warm, 95):.2f} ms   max {warm.max():.2f} ms")
    if profiler is not None:
        for key in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(18)
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
