"""Loopback load on the local server: requests/s and latency of a simple route.

Starts the local server in-process (a fresh SQLite data directory), then ``--clients``
threads, each with its own keep-alive connection, send ``GET /api/v1/health`` (or
``--path``) for ``--seconds``. Bounded: a fixed client count and duration, loopback only.

    .venv/bin/python bench/http_load.py --clients 8 --seconds 5
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--path", default="/api/v1/health")
    args = parser.parse_args(argv)

    from agent_memory.config import load_settings
    from agent_memory.http.local_server import make_server
    from agent_memory.runtime import Runtime, set_runtime

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGENT_MEMORY_DATA_DIR"] = str(Path(tmp) / "data")
        set_runtime(Runtime(load_settings(env={"AGENT_MEMORY_DATA_DIR": str(Path(tmp) / "data"),
                                               "AGENT_MEMORY_CURSOR_SECRET": "bench"})))
        server = make_server("127.0.0.1", 0, REPO)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.server_port}"
        latencies: list[float] = []
        errors = [0]
        lock = threading.Lock()
        stop_at = time.perf_counter() + args.seconds

        def client() -> None:
            mine: list[float] = []
            failed = 0
            with httpx.Client(base_url=url, timeout=30) as c:
                while time.perf_counter() < stop_at:
                    t0 = time.perf_counter()
                    try:
                        ok = c.get(args.path).status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    mine.append(time.perf_counter() - t0)
                    failed += not ok
            with lock:
                latencies.extend(mine)
                errors[0] += failed

        started = time.perf_counter()
        workers = [threading.Thread(target=client) for _ in range(args.clients)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - started
        server.shutdown()
        server.server_close()
        set_runtime(None)
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    print(f"GET {args.path}: {len(latencies)} requests, {args.clients} clients, {elapsed:.1f} s -> "
          f"{len(latencies) / elapsed:.0f} req/s; p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, "
          f"mean {statistics.fmean(latencies) * 1000:.1f} ms; errors {errors[0]}")
    return 1 if errors[0] else 0


if __name__ == "__main__":
    sys.exit(main())
