"""Write-path figures: model calls per written turn, and POST /facts latency excluding
model time, at N stored facts (default 1k and 10k), on the embedded store; then the add
per turn (a turn stored without extraction) as the caller sees it, inline projection
(before) against the local default, background batched projection (after).

Usage: python bench/write_latency.py [--facts 1000 10000] [--writes 200] [--store sqlite|dynamodb]
                                     [--turns 300] [--slow-call-ms 8] [--slow-text-ms 0.3]

Each measured write goes through the deployed handler stack in-process (API Gateway v2
event -> functions/facts/app.py -> write path -> SQLite + embedded index). The facts run
uses inline projection (its figure predates the background default); model time is
measured around every model call and subtracted. The turns run uses ``hashing/v1`` and a
slow fake embedder that sleeps per call plus per text (a local model's fixed per-call cost
and its per-text cost), and reports the add's p50/p95, the embedder calls, and the time
until every written turn is searchable (per turn).
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
                                  "AGENT_MEMORY_CURSOR_SECRET": "bench", "AGENT_MEMORY_PROJECTION": "inline"})
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


class CountingEmbedder:
    """Wraps an embedder: counts calls and texts; optionally sleeps per call and per text."""

    def __init__(self, inner, call_s: float = 0.0, text_s: float = 0.0):
        self.inner, self.call_s, self.text_s = inner, call_s, text_s
        self.name, self.dimension = inner.name, inner.dimension
        self.calls = 0
        self.texts = 0

    def embed(self, texts):
        self.calls += 1
        self.texts += len(texts)
        if self.call_s or self.text_s:
            time.sleep(self.call_s + self.text_s * len(texts))
        return self.inner.embed(texts)


def run_turns(projection: str, turns: int, call_s: float, text_s: float) -> dict:
    """``turns`` POST /facts with ``infer: none`` (store the turn, no extraction), one caller."""
    from agent_memory import runtime as runtime_module
    from agent_memory.adapters.embedders import HashingEmbedder
    from agent_memory.config import load_settings
    from agent_memory.http.local_server import LocalGateway
    from agent_memory.runtime import Runtime, set_runtime

    data = Path(tempfile.mkdtemp(prefix="am-bench-"))
    embedder = CountingEmbedder(HashingEmbedder(384), call_s, text_s)
    build = runtime_module.build_embedder
    runtime_module.build_embedder = lambda settings: embedder
    try:
        rt = Runtime(load_settings(env={"AGENT_MEMORY_DATA_DIR": str(data), "AGENT_MEMORY_CURSOR_SECRET": "bench",
                                        "AGENT_MEMORY_PROJECTION": projection, "AGENT_MEMORY_AUDIT_USAGE": "off"}))
        set_runtime(rt)
        gw = LocalGateway(REPO)

        def post(text: str) -> None:
            resp = gw.invoke("POST", "/api/v1/bench/facts", {"content-type": "application/json"},
                             json.dumps({"text": text, "infer": "none", "sessionId": "sess_bench"}).encode())
            assert resp["statusCode"] == 200, resp

        post("warm-up turn")
        rt.projector.drain()
        calls0, texts0 = embedder.calls, embedder.texts
        latencies: list[float] = []
        t_all = time.perf_counter()
        for i in range(turns):
            t = time.perf_counter()
            post(f"Turn {i}: we talked about the trip to city {i % 37} and dish {i % 53}.")
            latencies.append((time.perf_counter() - t) * 1000)
        rt.projector.drain()  # until every turn is searchable
        searchable_s = time.perf_counter() - t_all
        calls = embedder.calls - calls0
        rt.close()
    finally:
        runtime_module.build_embedder = build
        set_runtime(None)
    return {"p50_ms": statistics.median(latencies), "p95_ms": pct(latencies, 0.95), "calls": calls,
            "texts_per_call": (embedder.texts - texts0) / max(calls, 1),
            "searchable_ms_per_turn": searchable_s * 1000 / turns}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, nargs="*", default=[1000, 10000], help="stored-fact sizes (none: skip)")
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--store", default="sqlite", choices=["sqlite", "dynamodb"])
    parser.add_argument("--turns", type=int, default=300, help="turns added per projection mode (0: skip)")
    parser.add_argument("--slow-call-ms", type=float, default=8.0, help="the slow embedder's cost per call")
    parser.add_argument("--slow-text-ms", type=float, default=0.3, help="the slow embedder's cost per text")
    args = parser.parse_args()
    if args.store == "dynamodb":
        sys.exit("dynamodb figures need a real table; run against the local store here")
    if args.facts:
        print(f"{'stored facts':>12} {'model calls/turn':>17} {'p50 ms':>8} {'p95 ms':>8}   "
              "(infer: full, offline model, model time excluded)")
    for n in args.facts:
        row = run(n, args.writes, args.store)
        print(f"{row['stored_facts']:>12} {row['model_calls_per_turn']:>17.2f} {row['p50_ms']:>8.2f} {row['p95_ms']:>8.2f}")
    if args.turns:
        print(f"\nadd per turn (POST /facts, infer: none), {args.turns} turns, one caller:")
        print(f"{'embedder':>30} {'projection':>11} {'p50 ms':>8} {'p95 ms':>8} {'embed calls':>12} "
              f"{'texts/call':>11} {'searchable ms/turn':>19}")
        slow = f"slow ({args.slow_call_ms:g} ms/call + {args.slow_text_ms:g} ms/text)"
        for label, call_ms, text_ms in (("hashing/v1", 0.0, 0.0), (slow, args.slow_call_ms, args.slow_text_ms)):
            for projection in ("inline", "background"):
                row = run_turns(projection, args.turns, call_ms / 1000, text_ms / 1000)
                print(f"{label:>30} {projection:>11} {row['p50_ms']:>8.2f} {row['p95_ms']:>8.2f} {row['calls']:>12} "
                      f"{row['texts_per_call']:>11.1f} {row['searchable_ms_per_turn']:>19.2f}")


if __name__ == "__main__":
    main()
