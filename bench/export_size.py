"""Export and import figures: size and time of exporting a context of N turns and M facts
(default 10,000 and 1,000) on SQLite, importing it back into another SQLite context, loading it
into DynamoDB (moto, the table from template.yaml) and exporting it again from DynamoDB
(docs/export.md, "Figures"), and the export through the job form on both stores (the local
worker and file; moto's SQS, S3 and the administration function's worker handler).

Usage: python bench/export_size.py [--turns 10000] [--facts 1000] [--import-route]

Turns are written with ``infer: none`` in batches of 500 (no model call: the figure is the
export's, not extraction's); facts are ``triples`` writes of 16 attributes each through the
normal write path. Everything runs in-process through the handlers (API Gateway v2 events).
moto is an in-memory stand-in, so its times say little about DynamoDB's own.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CTX = "/api/v1/bench"


def _settings(data: Path, store: str):
    from agent_memory.config import load_settings

    return load_settings(env={"AGENT_MEMORY_DATA_DIR": str(data), "AGENT_MEMORY_STORE": store,
                              "AGENT_MEMORY_CURSOR_SECRET": "bench", "AWS_REGION": "us-east-1",
                              "AGENT_MEMORY_TABLE": "agent-memory-bench"}, audit_usage="off")


def _fill(api, turns: int, facts: int) -> None:
    for start in range(0, turns, 500):
        n = min(500, turns - start)
        msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {start + i}: notes on topic {i % 97}."}
                for i in range(n)]
        r = api.post(f"{CTX}/facts/batch", {"messages": msgs, "infer": "none"})
        assert r.status == 200, r.text
    for start in range(0, facts, 16):
        triples = [{"entity": {"type": "person", "name": f"Person{start + i}"}, "key": "employer",
                    "value": f"Company{(start + i) % 50}"} for i in range(min(16, facts - start))]
        r = api.post(f"{CTX}/facts", {"text": f"import {start}", "infer": "triples", "triples": triples})
        assert r.status == 200, r.text


def _export(api) -> tuple[str, float]:
    started = time.perf_counter()
    r = api.get(f"{CTX}/export")
    assert r.status == 200, r.text
    return r.text, time.perf_counter() - started


def _export_job(api, ctx: str, drain) -> tuple[bytes, float, dict]:
    """Start an export job, run it (``drain``), read its status and download the stream."""
    started = time.perf_counter()
    r = api.post(f"{ctx}/export/jobs", {})
    assert r.status == 202, r.text
    job_id = r.json()["id"]
    drain()
    job = api.get(f"{ctx}/export/jobs/{job_id}").json()
    assert job["state"] == "succeeded", job
    url = job["downloadUrl"]
    if "amazonaws.com" in url:
        import requests  # moto answers presigned URLs made through requests

        data = requests.get(url, timeout=60).content
    else:  # the local server's signed path
        got = api.get("/" + url.split("//", 1)[1].split("/", 1)[1])
        assert got.status == 200, got.text
        data = got.body
    return data, time.perf_counter() - started, job


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=1_000)
    parser.add_argument("--import-route", action="store_true",
                        help="load DynamoDB through POST /import (slow on moto: see below)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "shared"))
    sys.path.insert(0, str(REPO))
    import os

    import boto3
    from moto import mock_aws

    from agent_memory.adapters.dynamodb_table import create_table_from_template
    from agent_memory.runtime import Runtime, set_runtime
    from tests.conftest import InProcessApi

    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ[var] = "testing"
    out: dict = {"turns": args.turns, "facts": args.facts}
    with tempfile.TemporaryDirectory() as tmp, mock_aws():
        sqlite = Runtime(_settings(Path(tmp) / "sqlite", "sqlite"))
        set_runtime(sqlite)
        api = InProcessApi()
        started = time.perf_counter()
        _fill(api, args.turns, args.facts)
        out["fill_s"] = round(time.perf_counter() - started, 1)
        text, seconds = _export(api)
        end = json.loads(text.splitlines()[-1])
        out["sqlite_export"] = {"bytes": len(text.encode()), "lines": len(text.splitlines()),
                                "records": end["records"], "seconds": round(seconds, 2), "counts": end["counts"]}
        started = time.perf_counter()
        r = api.post("/api/v1/copy/import", raw=text.encode())  # re-keyed into another context
        assert r.status == 200 and r.json()["written"] == end["records"], r.text
        out["sqlite_import_s"] = round(time.perf_counter() - started, 1)
        data, seconds, job = _export_job(api, CTX, lambda: sqlite.portability_queue.join(timeout=600))
        out["sqlite_export_job"] = {"bytes": len(data), "seconds": round(seconds, 2),
                                    "records": job["result"]["records"],
                                    "records_equal_to_get_export": data.decode().splitlines()[1:-1]
                                    == text.splitlines()[1:-1]}
        settings = _settings(Path(tmp) / "dynamodb", "dynamodb")
        create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), settings.table_name)
        dynamo = Runtime(settings)
        set_runtime(dynamo)
        started = time.perf_counter()
        if args.import_route:
            r = api.post(f"{CTX}/import", raw=text.encode())
            assert r.status == 200, r.text
        else:
            # moto's TransactWriteItems deep-copies the whole table on every call, and a local
            # DynamoDB run writes each change with its projection outbox row in one, so POST
            # /import grows quadratically there; one plain PutItem a record (the store under the
            # projection) loads the table to export from instead.
            from agent_memory.services.operations.portability import _parse

            for record in _parse(text.splitlines(), "bench").records:
                dynamo.base_store.put(record)
        out["dynamodb_import_s" if args.import_route else "dynamodb_load_s"] = round(
            time.perf_counter() - started, 1)
        again, seconds = _export(api)
        out["dynamodb_export"] = {"bytes": len(again.encode()), "seconds": round(seconds, 2),
                                  "records_equal_to_sqlite": again.splitlines()[1:-1] == text.splitlines()[1:-1]}
        # The job form as deployed: the stack's bucket and queue (moto), the worker's handler.
        import dataclasses
        import importlib.util

        bucket = "agent-memory-bench-uploads"
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
        sqs = boto3.client("sqs", region_name="us-east-1")
        queue = sqs.create_queue(QueueName="portability")["QueueUrl"]
        jobs = Runtime(dataclasses.replace(settings, upload_bucket=bucket, portability_queue_url=queue))
        set_runtime(jobs)
        spec = importlib.util.spec_from_file_location("administration_app", REPO / "functions/administration/app.py")
        admin = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(admin)

        def drain() -> None:
            for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
                event = {"Records": [{"messageId": m["MessageId"], "body": m["Body"], "eventSource": "aws:sqs"}]}
                assert admin.lambda_handler(event, None) == {"batchItemFailures": []}

        data, seconds, job = _export_job(api, CTX, drain)
        out["dynamodb_export_job"] = {"bytes": len(data), "seconds": round(seconds, 2),
                                      "records_equal_to_sqlite": data.decode().splitlines()[1:-1]
                                      == text.splitlines()[1:-1]}
        sqlite.close()
        dynamo.close()
        jobs.close()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
