"""``agent-memory fake-model``: a local OpenAI-compatible model with realistic latency."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    fake = sub.add_parser("fake-model", help="a local OpenAI-compatible model with realistic latency (tests, "
                          "benchmarks): point OPENAI_BASE_URL at it")
    fake.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    fake.add_argument("--port", type=int, default=8199, help="port to listen on (default 8199)")
    fake.add_argument("--latency-ms", type=float, default=800.0, help="delay before each answer")
    fake.add_argument("--jitter-ms", type=float, default=0.0, help="uniform +/- spread around the latency")
    fake.add_argument("--failure-rate", type=float, default=0.0, help="share of requests answered HTTP 500")
    fake.add_argument("--hang-rate", type=float, default=0.0, help="share of requests never answered")
    fake.add_argument("--stream-chunk-ms", type=float, default=0.0, help="pause between streamed chunks")
    fake.add_argument("--seed", type=int, default=None, help="random seed of the jitter and failures")
    fake.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agent_memory.testing.fake_openai import run as serve_fake

    return serve_fake(args)
