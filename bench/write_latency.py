"""Write-path figures: model calls per written turn, and POST /facts latency excluding
model time, at N stored facts (default 1k and 10k), on the embedded store.

Usage: python bench/write_latency.py [--facts 1000 10000] [--writes 200] [--store sqlite|dynamodb]

Each measured write goes through the deployed handler stack in-process (API Gateway v2
event -> functions/facts/app.py -> write path -> SQLite + embedded index, inline
projection). Model time is measured around every model call and subtracted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class TimedModel:
    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.calls = 0
        self.seconds = 0.0

    def structured(self, **kw):
        self.calls += 1
        t0 = time.perf_counter()
        try:
            return self.inner.structured(**kw)
        finally:
            self.seconds += time.perf_counter() - t0


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run(n_facts: int, writes: int, store: str) -> dict:
    from agent_memory.config import load_settings
    from agent_memory.http.local_server import LocalGateway
    from agent_memory.runtime import Runtime, set_runtime

    data = Path(tempfile.mkdtemp(prefix="am-bench-"))
    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(data), "AGENT_MEMORY_STORE": store,
                                  "AGENT_MEMORY_CURSOR_SECRET": "bench"})
    rt = Runtime(settings)
    set_runtime(rt)
    model = TimedModel(rt.language_model(settings.models.extraction))
    rt.language_model = lambda ref: model  # type: ignore[method-assign]
    gw = LocalGateway(REPO)

    def post(body: dict) -> dict:
        resp = gw.invoke("POST", "/api/v1/bench/facts", {"content-type": "application/json"},
                         json.dumps(body).encode())
        assert resp["statusCode"] == 200, resp
        return json.loads(resp["body"])

    # Populate n_facts attributes (authoritative triples: no model call), 16 per write.
    t0 = time.perf_counter()
    for start in range(0, n_facts, 16):
        triples = [{"entity": {"type": "person", "name": f"Person {i}"}, "key": "employer", "value": f"Org {i % 97}"}
                   for i in range(start, min(n_facts, start + 16))]
        post({"text": "import", "infer": "triples", "triples": triples})
    populate_s = time.perf_counter() - t0

    texts = [f"I live in City{i}." if i % 2 else f"I like dish{i}." for i in range(writes)]
    latencies: list[float] = []
    calls_before = model.calls
    for text in texts:
        m0 = model.seconds
        t = time.perf_counter()
        post({"text": text})
        latencies.append((time.perf_counter() - t - (model.seconds - m0)) * 1000)
    return {"stored_facts": n_facts, "writes": writes, "populate_s": round(populate_s, 1),
            "model_calls_per_turn": (model.calls - calls_before) / writes,
            "p50_ms": round(statistics.median(latencies), 2), "p95_ms": round(pct(latencies, 0.95), 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--store", default="sqlite", choices=["sqlite", "dynamodb"])
    args = parser.parse_args()
    if args.store == "dynamodb":
        sys.exit("dynamodb figures need a real table; run against the local store here")
    print(f"{'stored facts':>12} {'model calls/turn':>17} {'p50 ms':>8} {'p95 ms':>8}   (infer: full, offline model, model time excluded)")
    for n in args.facts:
        row = run(n, args.writes, args.store)
        print(f"{row['stored_facts']:>12} {row['model_calls_per_turn']:>17.2f} {row['p50_ms']:>8.2f} {row['p95_ms']:>8.2f}")


if __name__ == "__main__":
    main()
