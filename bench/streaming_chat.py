"""Streamed chat through the built streaming chat function, against a buffered one (not a test).

Usage: python bench/streaming_chat.py [--runs 5] [--first-token-ms 800] [--tokens-per-s 20]
       [--build-dir .aws-sam/build]

Reads an existing build (``make sam-build``). The streaming chat function's artifact runs as in
tests/deploy/test_built_streaming.py: its exec wrapper from the built layer starts our runtime
loop against the fake Lambda Runtime API (``agent_memory.testing.fake_runtime_api``), with
DynamoDB and Secrets Manager on moto's server and the fake OpenAI-compatible model answering
the response call after ``--first-token-ms`` and then one token (4 characters) every
1/``--tokens-per-s`` seconds; extraction and embeddings are the offline ones, so the response
model is the only slow call. Each run sends the same chat twice, as the function URL delivers it
(streamed) and as the HTTP API does (buffered), and times, from the moment the loop took the
invocation off the Runtime API, the arrival there of the first ``event: delta`` chunk and of the
``event: done`` one; a buffered response arrives whole, so both are its arrival. Prints the
median and the worst of each, and the reply's length in tokens. Times are wall clock on this
machine: load inflates them, the difference between the two routes is the figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "deploy"), str(REPO / "bench")]

from artifact_cold_start import start_moto  # noqa: E402 - moto_server on a free port
from test_built_streaming import CTX, Stack  # noqa: E402 - the built function under our loop

from agent_memory.http.gateway import LocalGateway, build_event  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first-token-ms", type=float, default=800.0)
    parser.add_argument("--tokens-per-s", type=float, default=20.0)
    parser.add_argument("--build-dir", type=Path, default=REPO / ".aws-sam" / "build")
    args = parser.parse_args(argv)
    if not (args.build_dir / "ChatStreamFunction" / "app.py").exists():
        raise SystemExit(f"no build in {args.build_dir}: run `make sam-build`")

    moto, endpoint = start_moto()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stack = Stack(args.build_dir, endpoint, Path(tmp))
            try:
                return run(stack, args)
            finally:
                stack.close()
    finally:
        moto.terminate()
        moto.wait(timeout=10)


def run(stack: Stack, args: argparse.Namespace) -> int:
    gateway = LocalGateway(REPO)
    route, params = gateway.match("POST", f"{CTX}/chat")

    def message(i: int) -> str:
        return f"Hello! What do you remember about me? ({i})"

    def body(i: int) -> bytes:
        return json.dumps({"message": message(i), "stream": True, "bypassCache": True}).encode()

    def http_api_event(i: int) -> dict:
        event = build_event(route, "POST", f"{CTX}/chat", "", stack.headers(), body(i), params, "203.0.113.9")
        event["requestContext"]["domainName"] = "abc.execute-api.us-east-1.amazonaws.com"
        return event

    stack.call(stack.chat_event("warm up", bypassCache=True))  # the first request's lazy imports and clients
    b = stack.behaviour
    b.latency_ms, b.jitter_ms = args.first_token_ms, 0.0
    b.stream_piece_chars, b.stream_chunk_ms = 4, 1000.0 / args.tokens_per_s
    streamed = {"first": [], "done": []}
    buffered = []
    tokens = []
    for i in range(args.runs):
        r = stack.call(stack.chat_event(message(i), bypassCache=True))
        chunks = r.body_chunks()
        first = next(c for c in chunks if c.data.startswith(b"event: delta"))
        done = next(c for c in chunks if c.data.startswith(b"event: done"))
        streamed["first"].append((first.at - r.taken_at) * 1000)
        streamed["done"].append((done.at - r.taken_at) * 1000)
        reply = json.loads(done.data.decode().split("data: ", 1)[1])["reply"]
        tokens.append(-(-len(reply) // 4))
        whole = stack.call(http_api_event(i))
        assert json.loads(whole.body)["statusCode"] == 200
        buffered.append((whole.received_at - whole.taken_at) * 1000)

    def fig(values: list[float]) -> str:
        return f"{statistics.median(values):7.0f} ms (max {max(values):.0f})"

    print(f"chat through the built function, fake model at {args.first_token_ms:.0f} ms first token and "
          f"{args.tokens_per_s:g} tokens/s, {args.runs} runs, replies of {min(tokens)}-{max(tokens)} tokens")
    print(f"  streamed (function URL)   first delta {fig(streamed['first'])}   done {fig(streamed['done'])}")
    print(f"  buffered (HTTP API)       first delta {fig(buffered)}   done {fig(buffered)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
