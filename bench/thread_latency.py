"""Thread latency on the embedded store (not a test).

Usage: python bench/thread_latency.py [TURNS] [--samples N]      (default: 10000 turns, 200 samples)

In-process, through ``runtime.threads`` exactly as the threads function calls it: SQLite
record store + embedded search index (hashing embedder, inline projection) in a temporary
data directory. Fills one thread with TURNS turns (mixed speakers, two entities, a fifth of
them behind a reader list; words from a Zipf-distributed vocabulary), then measures:

- append: one more turn (transaction on the thread counter + turn row, then inline projection
  of the unit into the embedded index), p50/p95 over N appends;
- context: ``last_n_turns=10`` window plus up to five older semantic matches, as a
  non-admin reader (reader filtering inside the search), p50/p95 over N queries; also with
  ``entity_id`` and with ``last_n_turns=100``.

Prints milliseconds. The fill itself is timed too (appends/second).
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import tempfile
import time
from pathlib import Path

from agent_memory.access.request_context import RequestContext
from agent_memory.config import load_settings
from agent_memory.models.threads import AppendThreadTurnRequest, ThreadContextRequest
from agent_memory.runtime import Runtime

WORDS = ("account password reset link lock sign-in browser cookies cache mobile app outage invoice billing "
         "refund order shipping delay address printer vpn laptop screen battery update install error "
         "timeout network wifi email calendar meeting schedule review deadline project budget").split()
THREAD = "bench-thread"


# A Zipf-like vocabulary: a few very common support words and a long tail, as in real
# transcripts (a 40-word vocabulary would make every query term match a third of the thread).
VOCAB = list(WORDS) + [f"term{i}" for i in range(20_000)]
ZIPF = list(itertools.accumulate(1.0 / (rank + 1) ** 1.05 for rank in range(len(VOCAB))))


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, cum_weights=ZIPF, k=rng.randint(6, 24))).capitalize() + "."


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    return f"p50 {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms   (n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("turns", nargs="?", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(Path(tmp) / "data"),
                                      "AGENT_MEMORY_CURSOR_SECRET": "bench"})
        rt = Runtime(settings)
        threads = rt.threads
        writer = RequestContext(context_id="bench", principal="writer", admin=True)
        reader = RequestContext(context_id="bench", principal="agent-1", groups=("support",))

        def append() -> None:
            readers = ["group:tier-2"] if rng.random() < 0.2 else None
            threads.append(writer, THREAD, AppendThreadTurnRequest(
                text=sentence(rng), entity_id=rng.choice(["customer-42", "customer-7"]),
                metadata={"speaker": rng.choice(["customer", "agent"]), "channel": "email"},
                acl_readers=readers))

        start = time.perf_counter()
        for _ in range(args.turns):
            append()
        fill = time.perf_counter() - start
        print(f"store=sqlite search=embedded embedder={rt.embedder.name} turns={args.turns}")
        print(f"fill:                      {args.turns / fill:8.0f} appends/s ({fill:.1f} s)")

        samples = []
        for _ in range(args.samples):
            t0 = time.perf_counter()
            append()
            samples.append(time.perf_counter() - t0)
        print(f"append:                    {percentiles(samples)}")

        for label, extra in (("context last 10:", {}),
                             ("context last 10 + entity:", {"entity_id": "customer-42"}),
                             ("context last 100:", {"last_n_turns": 100})):
            samples = []
            for _ in range(args.samples):
                req = ThreadContextRequest(query=sentence(rng), **extra)
                t0 = time.perf_counter()
                items = threads.recall_turns(reader, THREAD, req)
                samples.append(time.perf_counter() - t0)
                assert any(i.origin == "semantic" for i in items)
            print(f"{label:<27}{percentiles(samples)}")


if __name__ == "__main__":
    main()
