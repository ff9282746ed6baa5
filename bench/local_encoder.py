"""The local MiniLM in ONNX Runtime (adapters/onnx_encoder.py): a question's pass, texts per
second at a batch size, and the process's peak memory (not a test: the vectors are checked in
tests/adapters/test_local_minilm.py). Each batch size runs in a fresh process, so the peaks
do not mix.

Usage: python bench/local_encoder.py [--texts 512] [--batch 8,16,32] [--threads 1]
(needs the semantic extra: .venv-bench, or the dev install)
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time

QUESTION = "What did the new neighbour say about the garden party last summer?"
WORDS = ("the a we went hiking with my sister last weekend saw bear near lake terrifying amazing "
         "lunch photos painting class started new job office downtown moved city apartment").split()


def child(texts: int, batch: int, threads: int) -> dict:
    from agent_memory.adapters.onnx_encoder import LocalEncoder, model_files

    encoder = LocalEncoder(model_files("all-MiniLM-L6-v2"), batch_size=batch, threads=threads)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rng = random.Random(1)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 120))) for _ in range(texts)]
    encoder.encode(corpus[:16])  # warm
    cpu = time.process_time()
    for start in range(0, texts, 256):  # the projection worker's largest batch
        encoder.encode(corpus[start:start + 256])
    per_text = (time.process_time() - cpu) / texts * 1000
    for _ in range(10):
        encoder.sentences([QUESTION])
    samples = []
    for _ in range(200):
        t = time.perf_counter()
        encoder.sentences([QUESTION])
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return {"batch": batch, "threads": threads, "loaded_mb": round(loaded), "ms_per_text": round(per_text, 2),
            "question_p50_ms": round(statistics.median(samples), 2), "question_p95_ms": round(samples[189], 2),
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--batch", default="8,16,32")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.texts, int(args.batch), args.threads)))
        return
    print(f"{args.texts} texts of 5-120 words, in calls of 256; a {len(QUESTION.split())}-word question alone")
    print(f"{'batch':>5} {'threads':>7} {'loaded MB':>9} {'ms/text':>8} {'question p50':>12} {'p95':>6} {'peak MB':>8}")
    for batch in args.batch.split(","):
        out = subprocess.run([sys.executable, __file__, "--child", "--texts", str(args.texts), "--batch", batch,
                              "--threads", str(args.threads)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['batch']:>5} {r['threads']:>7} {r['loaded_mb']:>9} {r['ms_per_text']:>8} "
              f"{r['question_p50_ms']:>9} ms {r['question_p95_ms']:>6} {r['peak_mb']:>8}")


if __name__ == "__main__":
    main()
