"""Latency of an in-process /query (``RetrievalService.retrieve``, hybrid) on the embedded
index with the hashing embedder (not a test).

Usage: python bench/query_latency.py [N ...]        (default: 10000 100000)

After the load, a fresh process opens the data directory (the runtime, the index and the
retrieval service built, as ``agent-memory serve`` has them before it listens) and times its
first query (the context's view and graph loaded: what a local user waits for after a
restart), its peak RSS, and then the warm queries; the loading process's own first query (its
view built in memory, persisted, and its graph built) is printed too.

For each N: a fresh runtime (SQLite records + embedded index, hashing embedder, 384-d) in a
temporary directory; a few dozen facts written through the product's write path (so tier-1
structured reads have entities to find); then N synthetic search units upserted straight
into the index (transcript turns of 20 speakers with speaker labels, user and assistant
turns, facts, chunks; English-like text with a Zipf vocabulary; mixed scopes; a share of
closed validity windows). Queries are a mix of questions naming a speaker, "I/me/my"
questions, time phrases and plain keyword queries, run with a realistic caller: a read
region, principals, 10 excluded ids (a chat transcript window). Prints p50/p95 of wall clock
and of the calling thread's CPU time (what wall time would be on an otherwise idle machine;
this machine is shared, so wall time includes waiting for a core).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from agent_memory.access.request_context import RequestContext
from agent_memory.config import load_settings
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.ports import SearchUnit
from agent_memory.runtime import Runtime

QUERIES = 300
BATCH = 2000
CONTEXT = "bench"
SPEAKERS = ["Priya", "Tunde", "Dana", "Okafor", "Ines", "Marek", "Yuki", "Farah", "Bjorn", "Leila",
            "Tomas", "Ravi", "Emma", "Oliver", "Sofia", "Liam", "Ava", "Noah", "Mia", "Lucas"]
COMMON = ("i the a to and of my it in that is was for you on with so we but this have just really "
          "about like been what had your me at be are all they some one got going how do time").split()
TOPICS = ("sailing school chess club camping trip marathon race painting sunrise museum kids dog "
          "cat garden book club concert guitar violin studio dance festival store launch business "
          "hiking mountains beach ocean recipe baking bread coffee tea travel paris rome tokyo "
          "conference speech school counseling mentor volunteer shelter project deadline meeting "
          "report budget team manager promotion interview job office remote laptop game tournament "
          "birthday party wedding family sister brother mother father friend neighbour").split()


def vocabulary(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    syllables = ["ka", "lo", "mi", "ten", "ra", "so", "vel", "dor", "pin", "ash", "qu", "ber", "lin", "tor"]
    rare = {"".join(rng.choice(syllables, size=int(rng.integers(2, 4)))) for _ in range(30_000)}
    vocab = np.array(COMMON + TOPICS + sorted(rare))
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    return vocab, weights / weights.sum()


def synthetic_units(n: int, rng: np.random.Generator, vocab: np.ndarray, weights: np.ndarray) -> list[SearchUnit]:
    kinds = ["turn"] * 6 + ["attribute", "action", "chunk"]
    scopes = [[], [], [], [], [["org/acme"]], [["org/acme/user/alice"]], [["org/other"]]]
    units = []
    start = 1_600_000_000
    for i in range(n):
        kind = kinds[i % len(kinds)]
        words = " ".join(rng.choice(vocab, size=int(rng.integers(8, 30)), p=weights))
        speaker = SPEAKERS[i % len(SPEAKERS)]
        entity = f"entity:person/{speaker.lower()}"
        role = ("assistant" if i % 7 == 0 else "user") if kind == "turn" else None
        when = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(start + i * 600))
        units.append(SearchUnit(
            id=f"{kind[:4]}_{i:08d}", context_id=CONTEXT, kind=kind, text=words, role=role,
            session_id=f"sess_{i // 40:06d}", scopes=scopes[i % len(scopes)],
            labels=[entity] if role == "user" or kind != "turn" else [],
            entity_ids=[entity] if role == "user" or kind != "turn" else [],
            valid_until="2001-01-01T00:00:00Z" if kind == "attribute" and i % 5 == 0 else None,
            occurred_at=when, source_ids=[f"turn_{i - 1:08d}"] if kind in ("attribute", "action") else [],
            metadata={"seq": i % 40 + 1, "speaker": speaker} if kind == "turn" else {}))
    return units


def queries(rng: np.random.Generator, vocab: np.ndarray, weights: np.ndarray) -> list[str]:
    topic = lambda: " ".join(rng.choice(TOPICS, size=int(rng.integers(1, 3))))  # noqa: E731
    out = []
    for i in range(QUERIES):
        speaker = SPEAKERS[int(rng.integers(len(SPEAKERS)))]
        shape = i % 5
        if shape == 0:
            out.append(f"What did {speaker} say about the {topic()}?")
        elif shape == 1:
            out.append(f"When did {speaker} go to the {topic()} in July?")
        elif shape == 2:
            out.append(f"Where do I live and what do I think about {topic()}?")
        elif shape == 3:
            out.append(" ".join(rng.choice(vocab[:5000], size=int(rng.integers(2, 7)),
                                           p=weights[:5000] / weights[:5000].sum())))
        else:
            out.append(f"Which {topic()} did {speaker} and {SPEAKERS[(i + 3) % len(SPEAKERS)]} talk about last year?")
    return out


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.array(values), p))


def _env(tmp: str) -> dict[str, str]:
    return {"AGENT_MEMORY_DATA_DIR": tmp, "AGENT_MEMORY_CURSOR_SECRET": "bench", "AGENT_MEMORY_SEARCH": "embedded",
            "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1"}


def run(n: int) -> None:
    rng = np.random.default_rng(7)
    vocab, weights = vocabulary(rng)
    with tempfile.TemporaryDirectory() as tmp:
        rt = Runtime(load_settings(env=_env(tmp), config_path=None))
        admin = RequestContext(context_id=CONTEXT, principal="bench", admin=True)
        for text in ("I live in Berlin.", "I work at Acme as an engineer.", "My sister Emma lives in Oslo.",
                     "I like sailing and chess.", "My manager is Oliver.", "Priya works at Globex."):
            rt.facts.write(admin, WriteFactsRequest(text=text))
        units = synthetic_units(n, rng, vocab, weights)
        t0 = time.perf_counter()
        for start in range(0, n, BATCH):
            rt.search.upsert(units[start:start + BATCH])
        load_s = time.perf_counter() - t0
        excluded = [u.id for u in units[-10:]]
        qs = queries(rng, vocab, weights)
        t0 = time.perf_counter()
        rt.retrieval.retrieve(READER, qs[0], k=10, exclude_ids=excluded)  # the view, built in this process
        built_ms = (time.perf_counter() - t0) * 1000
        rt.close()
        del rt
        with open(os.path.join(tmp, "bench-queries.json"), "w") as f:
            json.dump({"queries": qs, "excluded": excluded}, f)
        child = subprocess.run([sys.executable, __file__, "--reopen", tmp], check=True, capture_output=True,
                               text=True)
        got = json.loads(child.stdout.strip().splitlines()[-1])
        wall, cpu = got["wall"], got["cpu"]
        print(f"N={n:>7,} units (index load {load_s:.1f}s; first query in the loading process {built_ms:.0f} ms), "
              f"{len(qs)} queries, {got['hits'] / len(qs):.1f} hits/query")
        print(f"  fresh process: open {got['open_ms']:.0f} ms, first query {got['first_ms']:.0f} ms "
              f"(cpu {got['first_cpu_ms']:.0f} ms); RSS {got.get('rss_open_mb', 0):.0f} MiB when open, "
              f"{got.get('rss_mb', 0):.0f} MiB with the context's view (and graph) loaded")
        print(f"  /query hybrid k=10: wall p50={pct(wall, 50):6.1f} ms  p95={pct(wall, 95):6.1f} ms  "
              f"max={max(wall):6.1f} ms | cpu p50={pct(cpu, 50):6.1f} ms  p95={pct(cpu, 95):6.1f} ms")


READER = RequestContext(context_id=CONTEXT, principal="alice", groups=("eng",), read_region=("org/acme",))


def _rss_mb() -> float:
    """Resident memory now (``ru_maxrss`` would carry the loading parent's peak over the fork)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def reopen(tmp: str) -> None:
    """The child: open the data directory, time the first query, then the warm ones; one
    JSON line on stdout."""
    with open(os.path.join(tmp, "bench-queries.json")) as f:
        spec = json.load(f)
    qs, excluded = spec["queries"], spec["excluded"]
    t0 = time.perf_counter()
    rt = Runtime(load_settings(env=_env(tmp), config_path=None))
    _ = rt.search, rt.retrieval  # the index file opened and the query path imported, as `serve` starts
    open_ms = (time.perf_counter() - t0) * 1000
    rss_open_mb = _rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    rt.retrieval.retrieve(READER, qs[0], k=10, exclude_ids=excluded)
    first_ms, first_cpu_ms = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
    rss_mb = _rss_mb()
    wall, cpu, hits = [], [], 0
    for q in qs:
        t0, c0 = time.perf_counter(), time.thread_time()
        result = rt.retrieval.retrieve(READER, q, k=10, exclude_ids=excluded)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
        hits += len(result.hits)
    rt.close()
    print(json.dumps({"open_ms": open_ms, "first_ms": first_ms, "first_cpu_ms": first_cpu_ms, "wall": wall,
                      "cpu": cpu, "hits": hits, "rss_open_mb": rss_open_mb, "rss_mb": rss_mb}))


def main(argv: list[str]) -> None:
    if argv[:1] == ["--reopen"]:
        reopen(argv[1])
        return
    for n in [int(a.replace("_", "")) for a in argv] or [10_000, 100_000]:
        run(n)


if __name__ == "__main__":
    main(sys.argv[1:])
