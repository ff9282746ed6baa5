"""Round trips per request on the deployed code path: DynamoDB, search and model calls.

Usage: python bench/round_trips.py [--repeat N]

The runtime a function builds on Lambda (records in DynamoDB, search in OpenSearch, stream
projection, the environment template.yaml sets), in process: DynamoDB is moto's
(``mock_aws``), OpenSearch is the loopback search stub of tests/deploy/search_stub.py
(a real HTTP server; it answers searches with no hits), and each request is an API Gateway
v2 event into the route's ``functions/<area>/app.py`` handler (``LocalGateway``). Every
DynamoDB call is counted below the SDK (``botocore``'s ``_make_api_call``; a
``TransactWriteItems`` or ``BatchGetItem`` is one call; the calls the code runs at once,
through ``kernel.fan_out.run_at_once``, are one round trip), every request the stub receives is
a search call, and every language-model call and uncached embedding batch is a model call
(offline models: no latency, the same calls a hosted model would get).

For each route it prints the calls of the first request in a fresh container (cold: client
creation, index check, the caller's key) and of the requests after it (warm; the median over
``--repeat``), without an ``Idempotency-Key``, with each DynamoDB operation named.
tests/http/test_round_trips.py pins the warm counts (not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "deploy"))

CTX = "/api/v1/bench-ctx"
TABLE = "agent-memory-bench"
# (label, method, path, body): the goal routes first, then the other frequent ones.
ROUTES: list[tuple[str, str, str, Any]] = [
    ("POST /facts", "POST", f"{CTX}/facts", {"text": "I work at Acme and live in Lisbon."}),
    ("POST /query", "POST", f"{CTX}/query", {"query": "Where do I work?"}),
    ("POST /chat", "POST", f"{CTX}/chat", {"message": "Where do I work?"}),
    ("POST /context", "POST", f"{CTX}/context", {"query": "Where do I work?"}),
    ("GET /state", "GET", f"{CTX}/state", None),
    ("GET /entities", "GET", f"{CTX}/entities", None),
    ("GET /sessions", "GET", f"{CTX}/sessions", None),
]
# The budget (issue 30, item 4), warm, without an Idempotency-Key.
GOALS = {"POST /facts": {"dynamodb": 5}, "POST /query": {"dynamodb": 3, "search": 1},
         "POST /chat": {"dynamodb": 8, "search": 1}}


RECENT_READ = "Query[recent-units]"  # one shard (and bucket) of a search's recent-units read


def _rounds(calls: list[tuple[str, tuple[tuple[int, int], ...]]], depth: int = 0) -> list[list[str]]:
    """Calls in issue order, each with its ``kernel.fan_out.branch()``, as round trips: a call
    outside any fan-out is a round of its own; the calls of one fan-out (``run_at_once``) run
    at once, so the fan-out takes as many rounds as its longest call (a call reading two pages
    takes two), round ``i`` holding the ``i``-th round of each of its calls."""
    out: list[list[str]] = []
    i = 0
    while i < len(calls):
        op, path = calls[i]
        if len(path) <= depth:
            out.append([op])
            i += 1
            continue
        fan = path[depth][0]
        j = i
        while j < len(calls) and len(calls[j][1]) > depth and calls[j][1][depth][0] == fan:
            j += 1
        by_call: dict[int, list[tuple[str, tuple[tuple[int, int], ...]]]] = {}
        for call in calls[i:j]:
            by_call.setdefault(call[1][depth][1], []).append(call)
        nested = [_rounds(group, depth + 1) for group in by_call.values()]
        out += [[op for rounds in nested if r < len(rounds) for op in rounds[r]]
                for r in range(max(len(rounds) for rounds in nested))]
        i = j
    return out


@dataclass
class Calls:
    dynamodb: list[str] = field(default_factory=list)
    branches: list[tuple[tuple[int, int], ...]] = field(default_factory=list)  # fan_out.branch() of each
    other_aws: list[str] = field(default_factory=list)
    search: list[str] = field(default_factory=list)
    model: list[str] = field(default_factory=list)
    status: int = 0

    def rounds(self) -> list[str]:
        """The DynamoDB calls as round trips (``_rounds``), each named by its operations
        ("Query" for two queries at once, "Query[recent-units]" for a search's shard reads)."""
        return [" + ".join(sorted(set(ops))) for ops in _rounds(list(zip(self.dynamodb, self.branches, strict=True)))]

    def counts(self) -> dict[str, int]:
        return {"dynamodb": len(self.rounds()), "search": len(self.search), "model": len(self.model),
                "other_aws": len(self.other_aws), "dynamodb_calls": len(self.dynamodb)}


class Recorder:
    """Where the calls of the request in flight go."""

    def __init__(self) -> None:
        self.current = Calls()

    def take(self) -> Calls:
        taken, self.current = self.current, Calls()
        return taken


class _CountingModel:
    def __init__(self, inner: Any, recorder: Recorder):
        self._inner, self._recorder = inner, recorder
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in ("structured", "complete", "stream"):
            return attr

        def call(*args: Any, **kw: Any) -> Any:
            self._recorder.current.model.append(name)
            return attr(*args, **kw)

        return call


class _CountingEmbedder:
    def __init__(self, inner: Any, recorder: Recorder):
        self._inner, self._recorder = inner, recorder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed(self, texts: Any) -> Any:
        self._recorder.current.model.append(f"embed[{len(texts)}]")
        return self._inner.embed(texts)


def _environment(stub_url: str) -> dict[str, str]:
    """What template.yaml gives a function (resolved for this run), models offline."""
    return {
        "AGENT_MEMORY_STORE": "dynamodb", "AGENT_MEMORY_TABLE": TABLE, "AGENT_MEMORY_TENANT": "acme",
        "AGENT_MEMORY_SEARCH": "opensearch", "AGENT_MEMORY_PROJECTION": "stream",
        "AGENT_MEMORY_AUDIT_USAGE": "log",  # a request's cost row is a stdout line, no store call
        "AGENT_MEMORY_OPENSEARCH_URL": stub_url, "AGENT_MEMORY_OPENSEARCH_SERVICE": "es",
        "AGENT_MEMORY_OPENSEARCH_INDEX": "agent-memory-acme", "AGENT_MEMORY_OPENSEARCH_ENGINE": "lucene",
        "AGENT_MEMORY_OPENSEARCH_CREATE_INDEX": "false",
        "AGENT_MEMORY_MODELS_EXTRACTION": "offline/deterministic",
        "AGENT_MEMORY_MODELS_RESPONSE": "offline/deterministic", "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1",
        "AGENT_MEMORY_CURSOR_SECRET": "bench-cursor-secret-0123456789abcdef",
        "AWS_LAMBDA_FUNCTION_NAME": "round-trips-bench", "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }


@contextmanager
def deployed_path() -> Iterator[Callable[[str, str, Any], Calls]]:
    """A fresh "container" on the deployed code path; yields ``request(method, path, body)``,
    which returns the calls that request made."""
    import boto3
    import botocore.client
    from moto import mock_aws
    from search_stub import SearchCluster

    from agent_memory.adapters.dynamodb_table import create_table_from_template
    from agent_memory.config import load_settings
    from agent_memory.http.gateway import LocalGateway
    from agent_memory.kernel import fan_out
    from agent_memory.runtime import Runtime, set_runtime

    cluster = SearchCluster()
    saved_env = dict(os.environ)
    os.environ.update(_environment(cluster.listen("bench")))
    recorder = Recorder()
    lock = threading.Lock()
    make_api_call = botocore.client.BaseClient._make_api_call

    def recording(client: Any, operation: str, params: Any) -> Any:
        calls = recorder.current
        label = operation
        if operation == "Query" and "#recent-units#" in str((params.get("ExpressionAttributeValues") or {}).get(":p")):
            label = RECENT_READ
        if client.meta.service_model.signing_name == "dynamodb":
            with lock:  # the calls of a fan-out record from their own threads
                calls.dynamodb.append(label)
                calls.branches.append(fan_out.branch())
        else:
            calls.other_aws.append(label)
        return make_api_call(client, operation, params)

    try:
        with mock_aws():
            create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), TABLE,
                                       REPO / "template.yaml")
            setup = Runtime(load_settings(env=dict(os.environ)))
            setup.provision_search_index()  # the stack's deploy step, before any function runs
            key, _ = setup.api_keys.create("ops", groups=["support"], admin=True)
            setup.close()
            botocore.client.BaseClient._make_api_call = recording
            runtime = Runtime(load_settings(env=dict(os.environ)))
            language_model = runtime.language_model
            runtime.language_model = lambda ref: _CountingModel(language_model(ref), recorder)  # type: ignore[method-assign]
            runtime.embedder.inner = _CountingEmbedder(runtime.embedder.inner, recorder)
            set_runtime(runtime)
            gateway = LocalGateway(REPO)
            headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}

            def request(method: str, path: str, body: Any) -> Calls:
                seen = len(cluster.requests.get("bench", []))
                recorder.take()
                data = json.dumps(body).encode() if body is not None else b""
                response = gateway.invoke(method, path, headers, data, "203.0.113.9")
                calls = recorder.take()
                calls.search = [f"{m} {p}" for m, p, _ in cluster.requests.get("bench", [])[seen:]]
                calls.status = response["statusCode"]
                return calls

            try:
                yield request
            finally:
                set_runtime(None)
                runtime.close()
    finally:
        botocore.client.BaseClient._make_api_call = make_api_call
        os.environ.clear()
        os.environ.update(saved_env)
        cluster.close()


def measure(repeat: int = 3, routes: list[tuple[str, str, str, Any]] = ROUTES) -> dict[str, dict[str, Any]]:
    """``{label: {"cold": Calls, "warm": [Calls, ...]}}``, each route in its own fresh container
    (as on Lambda: one function per area), after one fact was written."""
    out: dict[str, dict[str, Any]] = {}
    for label, method, path, body in routes:
        with deployed_path() as request:
            if label != "POST /facts":
                request("POST", f"{CTX}/facts", {"text": "I work at Acme and live in Lisbon."})
            # The fact was written by another function: this one is cold for its own route.
            cold = request(method, path, body)
            warm = [request(method, path, body) for _ in range(repeat)]
        out[label] = {"cold": cold, "warm": warm}
    return out


def _ops(calls: Calls) -> str:
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in Counter(calls.dynamodb).items()) or "-"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3, help="warm requests per route (median)")
    args = parser.parse_args()
    with open(os.devnull, "w") as devnull:  # the functions' JSON logs and metrics go to stdout
        saved, sys.stdout = sys.stdout, devnull
        try:
            results = measure(args.repeat)
        finally:
            sys.stdout = saved
    print("calls per request, deployed code path (moto DynamoDB, loopback search stub, offline models),"
          f" warm = median of {args.repeat}; goal in brackets")
    print("ddb = DynamoDB round trips (the calls of one kernel.fan_out.run_at_once are one round); calls = every call")
    print(f"{'route':<15} {'status':>6} {'ddb cold':>8} {'ddb warm':>8} {'calls':>5} {'search cold':>11} {'search warm':>11} "
          f"{'model warm':>10}  DynamoDB operations (warm)")
    for label, r in results.items():
        cold, warm = r["cold"], r["warm"]

        goal = GOALS.get(label, {})

        def med(kind: str, warm: list[Calls] = warm) -> int:
            return int(statistics.median(c.counts()[kind] for c in warm))

        def with_goal(kind: str, value: int, goal: dict[str, int] = goal) -> str:
            return f"{value} ({goal[kind]})" if kind in goal else str(value)

        print(f"{label:<15} {warm[0].status:>6} {cold.counts()['dynamodb']:>8} {with_goal('dynamodb', med('dynamodb')):>8} "
              f"{med('dynamodb_calls'):>5} {cold.counts()['search']:>11} {with_goal('search', med('search')):>11} {med('model'):>10}  "
              f"{_ops(warm[0])}")
        if cold.other_aws or warm[0].other_aws:
            print(f"{'':<15} other AWS calls: cold {cold.other_aws}, warm {warm[0].other_aws}")
        print(f"{'':<15} search cold: {cold.search}; warm: {warm[0].search}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
