"""Asynchronous document ingestion against a latency-realistic model: the fake
OpenAI-compatible endpoint at ``--latency-ms`` (800 by default) through the local server.

Uploads one document of ``--chunks`` sections (200 by default; ``--section-chars`` pads each
section with prose, so a long section becomes several chunks), polls ``GET /documents/{id}``
until it is no longer ingesting, and prints time-to-ready next to the sequential time
(calls x latency), the extraction calls made (one per window of ``--window-chars`` characters
of consecutive chunks; 0: one per chunk), the model calls the fake saw at once, and the
slowest request (the upload and every poll).

    .venv/bin/python bench/document_ingest.py --latency-ms 800 --chunks 200
    .venv/bin/python bench/document_ingest.py --latency-ms 800 --chunks 40 --section-chars 1250
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--jitter-ms", type=float, default=50.0)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8, help="limits.document_concurrency")
    parser.add_argument("--window-chars", type=int, default=4000, help="limits.document_window_chars")
    parser.add_argument("--section-chars", type=int, default=0, help="pad each section to about this size")
    args = parser.parse_args(argv)

    from agent_memory.config import load_settings
    from agent_memory.http.local_server import make_server
    from agent_memory.runtime import Runtime, set_runtime
    from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer

    filler = "The policy applies to every office and was reviewed by the board this spring. "

    def section(i: int) -> str:
        body = f"Employee{i} works at Company{i}."
        pad = max(0, args.section_chars - len(body)) // len(filler)
        return f"## Policy {i}\n\n{filler * pad}{body}"

    sections = "\n\n".join(section(i) for i in range(args.chunks))
    text = f"# Policies\n\n{sections}"
    behaviour = Behaviour(latency_ms=args.latency_ms, jitter_ms=args.jitter_ms, seed=1)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(behaviour) as fake:
        env = {"AGENT_MEMORY_DATA_DIR": str(Path(tmp) / "data"), "AGENT_MEMORY_CURSOR_SECRET": "bench",
               "OPENAI_BASE_URL": fake.url, "AGENT_MEMORY_MODELS_EXTRACTION": "openai/fake-extract",
               "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat", "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1",
               "AGENT_MEMORY_LIMITS_DOCUMENT_CONCURRENCY": str(args.concurrency),
               "AGENT_MEMORY_LIMITS_DOCUMENT_WINDOW_CHARS": str(args.window_chars)}
        runtime = Runtime(load_settings(env=env))
        set_runtime(runtime)
        server = make_server("127.0.0.1", 0, REPO)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        ctx = "/api/v1/bench-docs"
        requests: list[float] = []
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_port}", timeout=60) as client:
            client.post(f"{ctx}/facts", json={"text": "warm up"})  # imports, first connections
            fake.stats.max_in_flight.clear()
            calls_before = fake.stats.by_path.get("/v1/chat/completions", 0)

            def timed(method: str, path: str, **kw) -> httpx.Response:
                started = time.perf_counter()
                response = client.request(method, f"{ctx}/{path}", **kw)
                requests.append(time.perf_counter() - started)
                return response

            started = time.perf_counter()
            upload = timed("POST", "documents", json={"title": "Policies", "text": text})
            assert upload.status_code == 202, upload.text
            doc_id = upload.json()["id"]
            doc = upload.json()
            while True:
                doc = timed("GET", f"documents/{doc_id}").json()
                if doc["status"] != "ingesting":
                    break
                time.sleep(0.1)
            ready_s = time.perf_counter() - started
            calls = fake.stats.by_path.get("/v1/chat/completions", 0) - calls_before
        server.shutdown()
        server.server_close()
        runtime.close()
        set_runtime(None)

    latency = args.latency_ms / 1000
    total = doc["chunksTotal"]
    print(f"fake model {args.latency_ms:g} ms ± {args.jitter_ms:g}, concurrency {args.concurrency}, "
          f"window {args.window_chars} chars; {len(text):,} characters, {total} chunks")
    print(f"extraction calls: {calls} ({len(text) / max(calls, 1):,.0f} characters a call)")
    print(f"document {doc['status']} after {ready_s:.1f} s (sequential {calls * latency:.1f} s, "
          f"target {-(-calls // args.concurrency) * latency:.1f} s); chunksDone {doc['chunksDone']}/{total}")
    print(f"model calls at once (seen by the fake): max {fake.stats.max_in_flight.get('/v1/chat/completions', 0)}")
    print(f"requests: {len(requests)} (upload + polls), upload {requests[0] * 1000:.0f} ms, "
          f"slowest {max(requests) * 1000:.0f} ms")
    return 0 if doc["status"] == "ready" else 1


if __name__ == "__main__":
    sys.exit(main())
