"""The service against a latency-realistic model: the fake OpenAI-compatible endpoint
(``agent_memory.testing.fake_openai``) at ``--latency-ms`` (800 by default), driven through
the real ``openai`` adapters over loopback HTTP and the local server.

Prints wall time per request (p50/max) for ``POST /facts`` and ``POST /chat``, the model
calls each made, one ``--batch``-message ``POST /facts/batch`` next to its sequential time
(messages x latency) and its parallel target (messages / concurrency x latency), and what a
hanging model costs (the 504 arrives at the request deadline). A batch that cannot finish
inside the deadline is refused up front, so give the batch figure a deadline it fits in:

    .venv/bin/python bench/slow_model.py --latency-ms 800 --requests 5 --deadline-s 29
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=800.0)
    parser.add_argument("--jitter-ms", type=float, default=100.0)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--deadline-s", type=float, default=5.0, help="limits.request_deadline_s for the run")
    parser.add_argument("--batch", type=int, default=100, help="messages in the /facts/batch request (0: skip)")
    parser.add_argument("--embeddings", choices=["fake", "hashing"], default="fake",
                        help="embed through the fake model too (its latency applies) or locally")
    args = parser.parse_args(argv)

    from agent_memory.config import load_settings
    from agent_memory.http.local_server import make_server
    from agent_memory.runtime import Runtime, set_runtime
    from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer

    behaviour = Behaviour(latency_ms=args.latency_ms, jitter_ms=args.jitter_ms, seed=1)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(behaviour) as fake:
        env = {"AGENT_MEMORY_DATA_DIR": str(Path(tmp) / "data"), "AGENT_MEMORY_CURSOR_SECRET": "bench",
               "OPENAI_BASE_URL": fake.url, "AGENT_MEMORY_MODELS_EXTRACTION": "openai/fake-extract",
               "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat",
               "AGENT_MEMORY_LIMITS_REQUEST_DEADLINE_S": str(args.deadline_s)}
        if args.embeddings == "fake":
            env |= {"AGENT_MEMORY_MODELS_EMBEDDING": "openai/fake-embed", "AGENT_MEMORY_EMBEDDING_DIMENSIONS": "256"}
        set_runtime(Runtime(load_settings(env=env)))
        server = make_server("127.0.0.1", 0, REPO)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        ctx = "/api/v1/bench-slow"
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_port}", timeout=60) as client:
            client.post(f"{ctx}/facts", json={"text": "warm up", "infer": "none"})  # imports, first connections

            def timed(path: str, body: dict) -> tuple[float, int, int]:
                before = fake.stats.requests
                started = time.perf_counter()
                status = client.post(f"{ctx}/{path}", json=body).status_code
                return time.perf_counter() - started, status, fake.stats.requests - before

            facts = [timed("facts", {"text": f"My colleague Person{i} lives in City{i}."}) for i in range(args.requests)]
            chats = [timed("chat", {"message": f"Where does Person{i} live?", "bypassCache": True})
                     for i in range(args.requests)]
            batch = timed("facts/batch", {"messages": [{"content": f"My neighbour Batch{i} works in Town{i}."}
                                                       for i in range(args.batch)]}) if args.batch else None
            concurrency = load_settings(env=env).limits.document_concurrency
            fake.behaviour.hang_rate = 1.0
            hung = timed("chat", {"message": "Where does Person0 live?", "bypassCache": True})
            fake.behaviour.hang_rate = 0.0
        server.shutdown()
        server.server_close()
        set_runtime(None)

    def line(name: str, rows: list[tuple[float, int, int]]) -> str:
        walls = sorted(r[0] * 1000 for r in rows)
        statuses = sorted({r[1] for r in rows})
        calls = statistics.fmean(r[2] for r in rows)
        return (f"{name}: {len(rows)} requests, p50 {statistics.median(walls):.0f} ms, max {walls[-1]:.0f} ms, "
                f"{calls:.1f} model HTTP calls each, statuses {statuses}")

    print(f"fake model {args.latency_ms:g} ms ± {args.jitter_ms:g}, embeddings {args.embeddings}, "
          f"deadline {args.deadline_s:g} s")
    print(line("POST /facts", facts))
    print(line("POST /chat ", chats))
    if batch is not None:
        latency_s = args.latency_ms / 1000
        print(f"POST /facts/batch of {args.batch}: {batch[1]} after {batch[0]:.1f} s, {batch[2]} model HTTP calls "
              f"(sequential {args.batch * latency_s:.0f} s; target {args.batch / concurrency * latency_s:.1f} s "
              f"at {concurrency} concurrent calls)")
    print(f"POST /chat with a hanging model: {hung[1]} after {hung[0] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
