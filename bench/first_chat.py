"""The first chat after the local service starts against the chats after it (not a test).

Usage: python bench/first_chat.py [--latency-ms 800] [--later 5] [--starts 2]

The fake OpenAI-compatible model (``agent_memory.testing.fake_openai``, no jitter) answers
every call after ``--latency-ms``; ``agent-memory serve`` runs as a subprocess on a fresh data
directory with extraction and response on that model (two model calls per chat, overlapped)
and local hashing embeddings, so the model is the only slow call. For each of ``--starts``
starts the service is started, and as soon as it says it is listening one buffered chat is
timed (the first chat), then ``--later`` more (their median); then the service is started
again and a streamed chat is timed to its first ``event: delta`` line (the streamed first
delta), with ``--later`` more streamed ones. Prints each figure in ms and in model latencies
(the target is under 1.25 for all three). Wall clock on this machine: load inflates it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
CTX = "/api/v1/bench-first-chat"


def start_service(data_dir: Path, model_url: str) -> tuple[subprocess.Popen, str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_MEMORY_"))}
    env |= {"OPENAI_BASE_URL": model_url, "AGENT_MEMORY_CURSOR_SECRET": "bench", "LOG_LEVEL": "INFO",
            "AGENT_MEMORY_MODELS_EXTRACTION": "openai/fake-extract", "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat",
            "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "agent_memory.interfaces.cli", "serve", "--port", "0",
                             "--data-dir", str(data_dir)], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"listening on (http://[\d.]+:\d+)", line)
        if found:
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, found.group(1), (time.perf_counter() - t0) * 1000
    proc.kill()
    raise SystemExit("the service did not start")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


def chat(client: httpx.Client, i: int) -> float:
    t0 = time.perf_counter()
    r = client.post(f"{CTX}/chat", json={"message": f"I moved to Lisbon in May {i}. Where do I live now?",
                                         "bypassCache": True})
    r.raise_for_status()
    return (time.perf_counter() - t0) * 1000


def streamed_first_delta(client: httpx.Client, i: int) -> float:
    t0 = time.perf_counter()
    with client.stream("POST", f"{CTX}/chat", json={"message": f"My sister is called Ana {i}. Who is she?",
                                                    "stream": True, "bypassCache": True}) as r:
        r.raise_for_status()
        first = None
        for line in r.iter_lines():
            if first is None and line.startswith("event: delta"):
                first = (time.perf_counter() - t0) * 1000
    if first is None:
        raise SystemExit("the stream sent no delta")
    return first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=800.0)
    parser.add_argument("--later", type=int, default=5)
    parser.add_argument("--starts", type=int, default=2)
    args = parser.parse_args(argv)

    from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer

    firsts, laters, stream_firsts, stream_laters, starts = [], [], [], [], []
    with FakeOpenAIServer(Behaviour(latency_ms=args.latency_ms, seed=1)) as fake, \
            tempfile.TemporaryDirectory() as tmp:
        for start in range(args.starts):
            for streamed in (False, True):
                proc, url, started_ms = start_service(Path(tmp) / f"data-{start}-{int(streamed)}", fake.url)
                starts.append(started_ms)
                try:
                    with httpx.Client(base_url=url, timeout=60) as client:
                        run = streamed_first_delta if streamed else chat
                        (stream_firsts if streamed else firsts).append(run(client, 0))
                        (stream_laters if streamed else laters).extend(run(client, i) for i in range(1, args.later + 1))
                finally:
                    stop(proc)

    lat = args.latency_ms

    def fig(name: str, values: list[float]) -> None:
        m = statistics.median(values)
        print(f"  {name:<34} {m:7.0f} ms = {m / lat:4.2f} model latencies   (all: {', '.join(f'{v:.0f}' for v in values)})")

    print(f"local service (agent-memory serve) against a fake model at {lat:.0f} ms, extraction and reply "
          f"overlapped, {args.starts} starts")
    print(f"  start to 'listening' (median)      {statistics.median(starts):7.0f} ms")
    fig("first chat after a start", firsts)
    fig("later chats (median)", laters)
    fig("streamed first delta, first chat", stream_firsts)
    fig("streamed first delta, later chats", stream_laters)
    return 0


if __name__ == "__main__":
    sys.exit(main())
