"""Forgetting one scope of a large table, on moto: what ``POST /scopes/forget`` reads and writes.

A table of ``--records`` memory records (document chunks, ~340 bytes of text each) spread evenly
over ``--scopes`` scopes is written through the record store the service writes through (each
record with its scope-index membership row, in the same transaction), then one scope is forgotten
through the service (``ScopeRegistry.forget``) under a request deadline of ``--deadline-s``,
calling again with the continuation until it answers complete.

Every DynamoDB call is counted by operation, with the capacity DynamoDB would charge for it
(moto models no throughput, so it is metered here as DynamoDB bills: reads 1 RCU per started
4 KB of each item fetched by key, per started 4 KB of a query's or scan's evaluated items in
all, strongly consistent; writes 1 WCU per started KB of each item, twice in
TransactWriteItems; a delete by the size of its key). ``--compare-scan`` also reads the table
once the way the service did before the index (a Scan of everything), for comparison.

    .venv/bin/python bench/scope_forget.py                          # 100,000 records, 50 scopes
    .venv/bin/python bench/scope_forget.py --records 10000 --scopes 10 --compare-scan
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "shared"))

TABLE = "agent-memory-bench"
REGION = "us-east-1"
TEXT = ("A paragraph of a document kept in memory, long enough to stand for an ordinary chunk of "
        "text that an agent stored under its scope and that an erasure request must find. ") * 2


def _value_bytes(value: dict[str, Any]) -> int:
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "N":
        return min(21, len(v))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in v)
    return len(json.dumps(v))


def item_bytes(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


class Meter:
    """Counts calls and bills capacity from the requests and responses botocore sees."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.queries: Counter[str] = Counter()  # queries by collection (the pk's fourth field)
        self.rcu = 0.0
        self.wcu = 0.0
        self.items_read = 0  # items fetched by key or returned by a query or scan
        self.items_evaluated = 0  # what queries and scans read (and were billed for)
        self.table_bytes: dict[tuple[str, str], int] = {}

    def reset(self) -> None:
        self.calls.clear()
        self.queries.clear()
        self.rcu = self.wcu = 0.0
        self.items_read = self.items_evaluated = 0

    def __call__(self, http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        op = model.name
        self.calls[op] += 1
        params = self._params
        if op == "BatchGetItem":
            for items in parsed.get("Responses", {}).values():
                self.items_read += len(items)
                self.rcu += sum(math.ceil(item_bytes(i) / 4096) for i in items)
        elif op in ("Query", "Scan"):
            if op == "Query":
                pk = params.get("ExpressionAttributeValues", {}).get(":p", {}).get("S", "")
                self.queries[(pk.split("#") + ["", "", "", ""])[3]] += 1
            items = parsed.get("Items", [])
            self.items_read += len(items)
            evaluated = int(parsed.get("ScannedCount", len(items)))
            self.items_evaluated += evaluated
            # A Scan's filter drops items after they were read: bill what it evaluated, at the
            # average item size of the table.
            size = (sum(item_bytes(i) for i in items) if op == "Query" else
                    evaluated * (sum(self.table_bytes.values()) / max(1, len(self.table_bytes))))
            self.rcu += max(1, math.ceil(size / 4096)) if evaluated else 0
        elif op == "GetItem":
            item = parsed.get("Item")
            self.items_read += 1 if item else 0
            self.rcu += math.ceil(item_bytes(item) / 4096) if item else 1
        elif op == "TransactWriteItems":
            for entry in params.get("TransactItems", []):
                self._write(entry, 2)
        elif op == "PutItem":
            self._write({"Put": params}, 1)
        elif op == "DeleteItem":
            self._write({"Delete": params}, 1)

    def _write(self, entry: dict[str, Any], factor: int) -> None:
        (kind, body), = entry.items()
        if kind == "Put":
            item = body["Item"]
            size = item_bytes(item)
            self.table_bytes[(item["pk"]["S"], item["sk"]["S"])] = size
        else:
            key = body["Key"]
            size = self.table_bytes.pop((key["pk"]["S"], key["sk"]["S"]), item_bytes(key))
        self.wcu += factor * max(1, math.ceil(size / 1024))

    def before(self, params: dict[str, Any], **_: Any) -> None:
        self._params = params


def _moto_without_table_copies() -> None:
    """Two shortcuts of moto's that DynamoDB does not take. moto copies the whole table once per item of every TransactWriteItems (its rollback), which
    makes a 100,000-record table take hours: the bench turns that copy off. Nothing in the bench
    fails a condition, and it checks what it forgot; throughput and time on moto are not
    DynamoDB's anyway (only the calls and the capacity are)."""
    import copy

    import moto.dynamodb.models as models
    from moto.dynamodb.models.table import Table

    class _Copy:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    models.copy = _Copy()  # type: ignore[attr-defined]

    # moto answers a query on the base table by sorting every item of the table and keeping
    # those of the partition key: a query of a 200,000-item table takes seconds. DynamoDB reads
    # one partition; so does the bench.
    query = Table.query

    def partition_query(self: Table, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("index_name") or not self.range_key_attr:
            return query(self, hash_key, *args, **kwargs)
        self.all_items = lambda: list(self.items.get(hash_key, {}).values())  # type: ignore[method-assign]
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = partition_query  # type: ignore[method-assign]


def build(store: Any, records: int, scopes: int) -> list[str]:
    from agent_memory.kernel import stored_item
    from agent_memory.ports import Put, Record

    paths = [f"org/tenant-{s:02d}" for s in range(scopes)]
    ops: list[Put] = []
    for n in range(records):
        path = paths[n % scopes]
        doc = f"doc_{n % scopes:02d}{(n // scopes) // 200:04d}"
        ops.append(Put(Record(pk=f"c#bench#default#chunks#{doc}", sk=f"{n:08d}", data={
            "kind": "chunk", "id": f"chunk_{n:08d}", "documentId": None, "ordinal": n, "text": TEXT,
            "scopes": [[path]], "created_by": "bench", "created_at": "2026-01-01T00:00:00Z"})))
    # 50 records a transaction: with their 50 membership rows, the 100 items one may hold.
    started = time.monotonic()
    for i, batch in enumerate(stored_item.batches(ops, stored_item.op_bytes, max_count=50)):
        store.transact(batch)
        if i % 200 == 0:
            print(f"  written {min(records, (i + 1) * 50):>7} records ({time.monotonic() - started:.0f} s)",
                  file=sys.stderr)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--scopes", type=int, default=50)
    parser.add_argument("--deadline-s", type=float, default=25.0, help="the request deadline of each call")
    parser.add_argument("--compare-scan", action="store_true", help="also read the table as one Scan (the old way)")
    args = parser.parse_args()

    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        os.environ.pop(name, None)
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION=REGION)
    import boto3
    from moto import mock_aws

    from agent_memory.access.request_context import RequestContext
    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore
    from agent_memory.adapters.dynamodb_table import create_table_from_template
    from agent_memory.config import load_settings
    from agent_memory.kernel import deadline
    from agent_memory.runtime import Runtime

    _moto_without_table_copies()
    with mock_aws(), tempfile.TemporaryDirectory() as tmp:
        client = boto3.client("dynamodb", region_name=REGION)
        create_table_from_template(client, TABLE)
        meter = Meter()
        client.meta.events.register("before-parameter-build.dynamodb.*", meter.before)
        client.meta.events.register("after-call.dynamodb.*", meter)
        settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": tmp, "AGENT_MEMORY_STORE": "dynamodb",
                                      "AGENT_MEMORY_TABLE": TABLE, "AWS_REGION": REGION,
                                      "AGENT_MEMORY_SEARCH": "none", "AGENT_MEMORY_CURSOR_SECRET": "b" * 64})
        runtime = Runtime(settings)
        runtime.__dict__["base_store"] = DynamoDBRecordStore(TABLE, region=REGION, client=client)
        # A table created with the index: its backfill finds nothing to do and is complete.
        assert runtime.scope_index.backfill().complete
        meter.reset()
        print(f"writing {args.records:,} records over {args.scopes} scopes (moto)...", file=sys.stderr)
        paths = build(runtime.store, args.records, args.scopes)
        write = (dict(meter.calls), meter.wcu)
        target = paths[args.scopes // 2]
        in_scope = args.records // args.scopes + (1 if args.scopes // 2 < args.records % args.scopes else 0)

        meter.reset()
        ctx = RequestContext(context_id="bench", principal="admin", admin=True)
        calls, forgotten, continuation, walls = 0, 0, None, []
        while True:
            started = time.monotonic()
            with deadline.within(args.deadline_s):
                if os.environ.get("BENCH_PROFILE"):
                    import cProfile
                    import pstats
                    prof = cProfile.Profile()
                    result = prof.runcall(runtime.scope_registry.forget, ctx, target, continuation)
                    pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
                else:
                    result = runtime.scope_registry.forget(ctx, target, continuation)
            walls.append(time.monotonic() - started)
            calls += 1
            forgotten += result.forgotten
            continuation = result.continuation
            print(f"  forget call {calls}: {result.forgotten} records in {walls[-1]:.1f} s, "
                  f"{'complete' if continuation is None else 'continuation'}", file=sys.stderr)
            if continuation is None:
                break
        report = {
            "table": {"records": args.records, "scopes": args.scopes, "tableItemsAfterForget": len(meter.table_bytes),
                      "writeCalls": write[0], "writeWCU": round(write[1])},
            "forget": {"path": target, "recordsInScope": in_scope, "forgotten": forgotten, "requests": calls,
                       "requestSeconds": [round(w, 2) for w in walls], "deadlineSeconds": args.deadline_s,
                       "dynamodbCalls": dict(meter.calls), "queriesByCollection": dict(meter.queries),
                       "itemsRead": meter.items_read,
                       "itemsEvaluatedByQueryOrScan": meter.items_evaluated,
                       "consumedRCU": round(meter.rcu), "consumedWCU": round(meter.wcu)},
        }
        print(json.dumps(report, indent=2), file=sys.stderr, flush=True)
        if args.compare_scan:
            print("reading the table as one Scan...", file=sys.stderr)
            meter.reset()
            pages = 0
            for _ in runtime.base_store.scan("c#bench#"):
                pass
            pages = meter.calls["Scan"]
            report["scanOfTheTable"] = {"dynamodbCalls": dict(meter.calls), "itemsEvaluated": meter.items_evaluated,
                                        "consumedRCU": round(meter.rcu), "pages": pages}
        print(json.dumps(report, indent=2))
        assert forgotten == in_scope, (forgotten, in_scope)
    return 0


if __name__ == "__main__":
    sys.exit(main())
