"""Throughput of the hashing embedder (the offline and benchmark default) on a large batch
(not a test: tests/adapters/test_embedders.py checks the vectors, this prints the time).

Usage: python bench/embedder_speed.py [N]        (default: 10000 texts of 15 words)
"""

from __future__ import annotations

import random
import sys
import time

from agent_memory.adapters.embedders import HashingEmbedder


def main(n: int = 10_000) -> None:
    rng = random.Random(0)
    vocab = ["".join(rng.choices("abcdefghij", k=rng.randint(3, 9))) for _ in range(3000)]
    texts = [" ".join(rng.choices(vocab, k=15)) for _ in range(n)]
    embedder = HashingEmbedder()
    wall, cpu = time.perf_counter(), time.thread_time()
    vectors = embedder.embed(texts)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    print(f"hashing embedder: {n} texts -> {vectors.shape[1]}-d in {wall:.3f} s wall, "
          f"{cpu:.3f} s CPU ({n / wall:,.0f} texts/s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
