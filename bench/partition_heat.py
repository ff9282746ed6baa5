"""Write units per DynamoDB partition key per second: a 5 MiB document and a write burst to
one context, through the write path and the projector, against moto.

moto models no throughput, so this bench meters it: every DynamoDB write the store sends is
charged as DynamoDB charges it (1 WCU per started KB of the item, twice inside
TransactWriteItems; a delete by the size of the item it removes; a write to an item carrying
``gsi1pk`` also to that GSI partition), at a *simulated* second, and the hottest partition keys
are printed. One partition takes at most 1,000 WCU/s.

- Document: ``--doc-mib`` of markdown (5 MiB) through ``POST /documents``'s service (its
  chunks' sources stored at once, all charged to one second) and the ingestion worker, its
  chunks committed at the configured ingestion rate (``--concurrency`` model calls in flight of
  ``--call-s`` seconds each: 8 chunks a second), for ``--ingest-chunks`` chunks (the rate is
  steady after the first seconds; 0: the whole document, which takes hours on moto).
- Burst: ``--burst-rate`` ``POST /facts`` writes a second for ``--burst-s`` seconds to one
  context, each its own turn, through the local gateway (the HTTP route's code).

Both run with OpenSearch (a loopback stub answering the adapter's calls) so the projector
writes what it writes deployed (the recent-units rows of every indexed unit).

    .venv/bin/python bench/partition_heat.py                       # both: 5 MiB, 100/s for 3 s
    .venv/bin/python bench/partition_heat.py --doc-mib 0.5 --burst-s 3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import threading
from collections import defaultdict
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LIMIT_WCU_S = 1000
KB = 1024


# --- the meter -------------------------------------------------------------------------------


def value_bytes(value: dict[str, Any]) -> int:
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "N":
        return min(21, len(v))
    if kind == "B":
        return len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in v)
    if kind == "NS":
        return sum(min(21, len(s)) for s in v)
    if kind == "L":
        return 3 + sum(1 + value_bytes(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + value_bytes(e) for k, e in v.items())
    raise ValueError(kind)


def item_bytes(item: dict[str, Any]) -> int:
    return sum(len(name.encode("utf-8")) + value_bytes(value) for name, value in item.items())


def wcu(size: int) -> int:
    return max(1, math.ceil(size / KB))


class Clock:
    """The simulated second writes are charged at."""

    def __init__(self) -> None:
        self.now = 0.0


class MeteredClient:
    """A DynamoDB client that charges every write to its partition key at ``clock.now``."""

    def __init__(self, inner: Any, clock: Clock) -> None:
        self._inner, self._clock = inner, clock
        self.charges: dict[tuple[str, int], float] = defaultdict(float)  # (key, second) -> WCU
        self.by_phase: dict[str, dict[tuple[str, int], float]] = defaultdict(lambda: defaultdict(float))
        self.phase = "setup"
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _charge(self, key: str, units: float) -> None:
        second = int(self._clock.now)
        with self._lock:
            self.by_phase[self.phase][(key, second)] += units

    def _charge_item(self, item: dict[str, Any], factor: int) -> None:
        units = wcu(item_bytes(item)) * factor
        self._charge(item["pk"]["S"], units)
        if "gsi1pk" in item:
            self._charge("gsi1:" + item["gsi1pk"]["S"], wcu(item_bytes(item)))

    def _existing(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        return self._inner.get_item(TableName=table, Key=key).get("Item")

    def _charge_delete(self, table: str, key: dict[str, Any], factor: int) -> None:
        old = self._existing(table, key)
        self._charge(key["pk"]["S"], wcu(item_bytes(old) if old else 0) * factor)
        if old and "gsi1pk" in old:
            self._charge("gsi1:" + old["gsi1pk"]["S"], wcu(item_bytes(old)))

    def put_item(self, **kw: Any) -> Any:
        out = self._inner.put_item(**kw)
        self._charge_item(kw["Item"], 1)
        return out

    def delete_item(self, **kw: Any) -> Any:
        self._charge_delete(kw["TableName"], kw["Key"], 1)
        return self._inner.delete_item(**kw)

    def transact_write_items(self, **kw: Any) -> Any:
        deletes = [(op["Delete"]["TableName"], op["Delete"]["Key"]) for op in kw["TransactItems"] if "Delete" in op]
        olds = {json.dumps(k, sort_keys=True): self._existing(t, k) for t, k in deletes}
        out = self._inner.transact_write_items(**kw)
        for op in kw["TransactItems"]:
            if "Put" in op:
                self._charge_item(op["Put"]["Item"], 2)
            elif "Delete" in op:
                old = olds[json.dumps(op["Delete"]["Key"], sort_keys=True)]
                self._charge(op["Delete"]["Key"]["pk"]["S"], wcu(item_bytes(old) if old else 0) * 2)
            elif "ConditionCheck" in op:
                self._charge(op["ConditionCheck"]["Key"]["pk"]["S"], 2)
        return out

    def batch_write_item(self, **kw: Any) -> Any:
        for table, requests in kw["RequestItems"].items():
            for r in requests:
                if "PutRequest" in r:
                    self._charge_item(r["PutRequest"]["Item"], 1)
                else:
                    self._charge_delete(table, r["DeleteRequest"]["Key"], 1)
        return self._inner.batch_write_item(**kw)


def collection(key: str) -> str:
    """A key with its ids taken out: which collection it belongs to."""
    key = re.sub(r"^(gsi1:)?c#[^#]+#[^#]+#", r"\1c#<ctx>#<part>#", key)
    key = re.sub(r"(doc|sess|chunk|turn|attr|rel|act|instr|unc|ent)_[0-9A-Za-z]{10,}", r"<\1 id>", key)
    key = re.sub(r"entity:[^#]+", "<entity>", key)
    key = re.sub(r"#recent-units#\d+#\d+$", "#recent-units#<bucket>#<shard>", key)
    key = re.sub(r"#(doc-parts#<doc id>|idem)#[0-9a-f]+$", r"#\1#<shard>", key)
    return key


def report(title: str, charges: dict[tuple[str, int], float], top: int) -> float:
    per_key: dict[str, float] = defaultdict(float)  # the key's hottest second
    total: dict[str, float] = defaultdict(float)
    for (key, _second), units in charges.items():
        per_key[key] = max(per_key[key], units)
    for (key, _second), units in charges.items():
        total[key] += units
    seconds = len({s for _, s in charges}) or 1
    print(f"\n{title}: {len(per_key)} partition keys written in {seconds} simulated seconds, "
          f"{sum(total.values()):,.0f} WCU in all")
    print(f"  {'hottest second WCU':>18}  {'total WCU':>10}  key")
    hottest = sorted(per_key.items(), key=lambda kv: -kv[1])
    for key, peak in hottest[:top]:
        flag = "  OVER 1,000" if peak > LIMIT_WCU_S else ""
        print(f"  {peak:>18,.0f}  {total[key]:>10,.0f}  {key[:110]}{flag}")
    per_collection: dict[str, float] = defaultdict(float)
    for key, peak in per_key.items():
        per_collection[collection(key)] = max(per_collection[collection(key)], peak)
    print("  hottest key per collection (WCU in its hottest second):")
    for name, peak in sorted(per_collection.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {peak:>10,.0f}  {name}")
    return hottest[0][1] if hottest else 0.0


def copy_tables_once_per_transaction() -> None:
    """moto backs up a table before TransactWriteItems once per *item* of the transaction (a
    deep copy of the whole table each time), which makes a 5 MiB document's transactions take
    hours; one backup per table per transaction is the same state, so copy each table once."""
    import copy as real_copy
    import threading

    from moto.dynamodb import models

    class OncePerCall:
        # Per thread: the burst's writers run transactions at once.
        local = threading.local()

        @classmethod
        def deepcopy(cls, value: Any, memo: Any = None) -> Any:
            cache = getattr(cls.local, "cache", None)
            if cache is None:
                return real_copy.deepcopy(value, memo)
            if id(value) not in cache:
                cache[id(value)] = real_copy.deepcopy(value, memo)
            return cache[id(value)]

    transact = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: Any) -> None:
        OncePerCall.local.cache = {}
        try:
            return transact(self, transact_items)
        finally:
            OncePerCall.local.cache = None

    models.copy = OncePerCall  # type: ignore[attr-defined]
    models.DynamoDBBackend.transact_write_items = transact_write_items

    # moto applies a request in unlocked steps (a transaction copies the table while another
    # thread writes it): one request at a time inside moto, as DynamoDB applies each atomically
    # (tests/conftest.py's serialise_moto).
    from moto.core.botocore_stubber import BotocoreStubber

    lock = threading.Lock()
    process_request = BotocoreStubber.process_request

    def one_request_at_a_time(self: Any, request: Any) -> Any:
        with lock:
            return process_request(self, request)

    BotocoreStubber.process_request = one_request_at_a_time  # type: ignore[method-assign]


# --- a loopback OpenSearch -------------------------------------------------------------------


def search_stub() -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: Any = None) -> None:
            data = json.dumps(body if body is not None else {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            path = self.path.split("?")[0]
            if path.endswith("/_bulk"):
                actions = [json.loads(line) for line in body.splitlines() if line.strip()]
                items = [{next(iter(a)): {"status": 200}} for a in actions
                         if next(iter(a)) in ("index", "create", "update", "delete")]
                return self._reply(200, {"took": 1, "errors": False, "items": items})
            if path.endswith("/_msearch"):
                n = sum(1 for line in body.splitlines() if line.strip()) // 2
                return self._reply(200, {"responses": [{"hits": {"hits": []}}] * n})
            if path.endswith(("/_search", "/_delete_by_query", "/_count")):
                return self._reply(200, {"hits": {"hits": [], "total": {"value": 0}}, "deleted": 0, "count": 0})
            if self.command == "HEAD":
                return self._reply(404)
            if self.command == "PUT":
                return self._reply(200, {"acknowledged": True})
            if path == "/":
                return self._reply(200, {"version": {"number": "2.19.0"}})
            return self._reply(404, {"found": False})

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


# --- the drive -------------------------------------------------------------------------------


def document_text(mib: float) -> str:
    out, size, i = ["# Handbook\n"], 0, 0
    target = int(mib * 1024 * 1024) - 2048  # just under the limit (limits.document_bytes)
    while size < target:
        section = (f"\n## Policy {i}\n\nEmployee{i} works at Company{i % 97} in City{i % 53}. "
                   + " ".join(f"Clause {i}.{j}: staff of team {i % 31} follow rule {j} of the handbook "
                              f"when they travel, meet clients or file expenses." for j in range(8)) + "\n")
        out.append(section)
        size += len(section.encode())
        i += 1
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc-mib", type=float, default=5.0, help="document size (0: none)")
    parser.add_argument("--concurrency", type=int, default=8, help="model calls in flight (limits.document_concurrency)")
    parser.add_argument("--call-s", type=float, default=1.0, help="seconds one extraction call takes")
    parser.add_argument("--ingest-chunks", type=int, default=48,
                        help="chunks ingested (the rate is steady after a few seconds; 0: all)")
    parser.add_argument("--burst-rate", type=int, default=100, help="POST /facts a second (0: none)")
    parser.add_argument("--burst-s", type=int, default=3)
    parser.add_argument("--scope", default=None,
                        help="the scope every burst write names (org/acme: one busy scope; default none)")
    parser.add_argument("--dimensions", type=int, default=1024, help="embedding dimensions (Titan v2: 1024)")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        os.environ[name] = value
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        os.environ.pop(name, None)

    import boto3
    from moto import mock_aws

    from agent_memory.access.request_context import RequestContext
    from agent_memory.adapters.dynamodb_table import create_table_from_template
    from agent_memory.config import load_settings
    from agent_memory.http.local_server import LocalGateway
    from agent_memory.models.documents import DocumentUpload
    from agent_memory.runtime import Runtime, set_runtime

    copy_tables_once_per_transaction()
    clock = Clock()
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp, mock_aws():
        server, url = search_stub()
        settings = load_settings(env={
            "AGENT_MEMORY_DATA_DIR": str(Path(tmp) / "data"), "AGENT_MEMORY_STORE": "dynamodb",
            "AGENT_MEMORY_TABLE": "bench-heat-document", "AWS_REGION": "us-east-1", "AGENT_MEMORY_CURSOR_SECRET": "bench",
            "AGENT_MEMORY_SEARCH": "opensearch", "AGENT_MEMORY_OPENSEARCH_URL": url,
            "AGENT_MEMORY_OPENSEARCH_ENGINE": "lucene", "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1",
            "AGENT_MEMORY_EMBEDDING_DIMENSIONS": str(args.dimensions),
            "AGENT_MEMORY_LIMITS_DOCUMENT_CONCURRENCY": "1"})
        client = boto3.client("dynamodb", region_name="us-east-1")
        meter: MeteredClient | None = None

        def fresh_runtime(table: str) -> Runtime:
            """A runtime on a table of its own (moto's transactions slow down with the table's size)."""
            nonlocal meter
            create_table_from_template(client, table)
            rt = Runtime(replace(settings, table_name=table))
            set_runtime(rt)
            if meter is None:
                meter = MeteredClient(rt.base_store.client, clock)
            else:
                meter._inner = rt.base_store.client
            rt.base_store._client = meter
            # The recent units' time buckets follow the simulated clock, as they would follow
            # real time in a deployed run (a bench run takes minutes of real time).
            index = rt.search
            while getattr(index, "recent", None) is None:
                index = index.inner
            epoch = 1_800_000_000.0
            index.recent._clock = lambda: epoch + clock.now
            return rt

        rt = None
        if args.doc_mib > 0:
            rt = fresh_runtime("bench-heat-document")
            text = document_text(args.doc_mib)
            ctx = RequestContext(context_id="heat-doc", principal="local-admin", admin=True)
            jobs: list[Any] = []
            rt.__dict__["ingestion_queue"] = type("Q", (), {"send": staticmethod(jobs.append)})()
            meter.phase = "document"
            upload = rt.documents.ingest(ctx, DocumentUpload(text=text, format="markdown"))
            chunks = upload.document.chunk_count
            calls = [0]
            extract = rt.facts.extract
            per_s = args.concurrency / args.call_s

            def paced(*a: Any, **k: Any) -> Any:
                calls[0] += 1
                clock.now = calls[0] / per_s  # the k-th call returns at k / rate seconds
                return extract(*a, **k)

            rt.facts.extract = paced  # type: ignore[method-assign]
            print(f"document: {len(text.encode()) / 2**20:.2f} MiB, {chunks} chunks, "
                  f"{per_s:g} chunks a second ({args.concurrency} calls of {args.call_s:g} s in flight)",
                  file=sys.stderr)
            from agent_memory.services.documents.ingestion import IngestionInterrupted

            limit = args.ingest_chunks or chunks
            try:
                status = rt.ingestion.process(jobs[0], should_stop=lambda: calls[0] >= limit)
            except IngestionInterrupted as stopped:
                status = f"stopped as configured ({stopped})"
            finally:
                del rt.facts.extract  # the burst's writes are paced by their own clock
            print(f"document status: {status}", file=sys.stderr)
            worst = max(worst, report(f"{args.doc_mib:g} MiB document ({chunks} chunks, {calls[0]} ingested)",
                                      meter.by_phase["document"], args.top))

        if args.burst_rate > 0:
            if rt is not None:
                rt.close()
            rt = fresh_runtime("bench-heat-burst")
            gw = LocalGateway(REPO)
            meter.phase = "burst"
            start = clock.now = math.ceil(clock.now) + 10
            n = args.burst_rate * args.burst_s
            for i in range(n):
                clock.now = start + i / args.burst_rate
                body: dict[str, Any] = {"text": f"I live in City{i}." if i % 2 else f"Person{i} likes dish{i % 89}."}
                if args.scope:
                    body["scopes"] = args.scope
                resp = gw.invoke("POST", "/api/v1/heat-burst/facts", {"content-type": "application/json"},
                                 json.dumps(body).encode())
                if resp["statusCode"] != 200:
                    raise SystemExit(f"write {i} answered {resp['statusCode']}: {resp['body'][:300]}")
            worst = max(worst, report(f"burst of {args.burst_rate} POST /facts a second for {args.burst_s} s",
                                      meter.by_phase["burst"], args.top))
        server.shutdown()
        if rt is not None:
            rt.close()
        set_runtime(None)
    verdict = "no key above" if worst <= LIMIT_WCU_S else "a key above"
    print(f"\nhottest key: {worst:,.0f} WCU in one second ({verdict} {LIMIT_WCU_S:,} WCU/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
