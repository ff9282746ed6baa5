"""The job form of export and import (docs/export.md "The job form"): POST /export/jobs writes
the stream to the stack's bucket and GET /export/jobs/{id} hands a presigned download; an
import job takes a presigned PUT, checks the whole stream before writing and reports counts or
the bad line. On moto (DynamoDB from template.yaml, S3, SQS, the worker run as Lambda runs it:
the administration function's handler with an SQS event) a stream over Lambda's 6 MB payload
goes both ways; locally the same routes run in-process and serve the file themselves; keys of
other grants cannot start, read or download a job."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from agent_memory.access.static_principals import parse_principals
from agent_memory.runtime import Runtime, get_runtime, set_runtime
from tests.conftest import REPO, InProcessApi, make_settings, serialise_moto

CTX = "/api/v1/exp"
BUCKET = "agent-memory-uploads-test"
LAMBDA_PAYLOAD = 6 * 1024 * 1024


def ok(r: Any, status: int = 200) -> Any:
    assert r.status == status, r.text
    return r.json()


def _admin_handler():
    spec = importlib.util.spec_from_file_location("administration_app_jobs", REPO / "functions/administration/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.lambda_handler


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Runtime, str]]:
    """A DynamoDB runtime as the deployed administration function sees it: the table from
    template.yaml, the upload bucket and the portability queue (moto)."""
    from moto import mock_aws

    from agent_memory.adapters.dynamodb_table import create_table_from_template

    serialise_moto(monkeypatch)
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        url = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="portability")["QueueUrl"]
        settings = make_settings(tmp_path, "dynamodb", audit_usage="off")
        create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), settings.table_name)
        rt = Runtime(dataclasses.replace(settings, upload_bucket=BUCKET, portability_queue_url=url))
        set_runtime(rt)
        try:
            yield rt, url
        finally:
            rt.close()
            set_runtime(None)


def run_worker(url: str) -> int:
    """Deliver the queue's messages to the worker as Lambda's SQS event source does."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    handler = _admin_handler()
    delivered = 0
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
        if not messages:
            return delivered
        m = messages[0]
        event = {"Records": [{"messageId": m["MessageId"], "body": m["Body"], "eventSource": "aws:sqs"}]}
        assert handler(event, None) == {"batchItemFailures": []}
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        delivered += 1


def turn_line(session: str, n: int, text: str) -> dict[str, Any]:
    sk = f"{n:08d}"
    data = {"kind": "turn", "id": f"turn_{session}{sk}", "session": session, "seq": n, "role": "user",
            "content": text, "createdAt": "2024-01-01T00:00:00+00:00", "observedAt": "2024-01-01T00:00:00+00:00",
            "contextId": "src", "partition": "default", "scopes": [], "labels": []}
    return {"type": "turn", "pk": f"default#turns#{session}", "sk": sk, "version": 1, "data": data}


def big_stream(records: int, text_bytes: int) -> bytes:
    lines = [{"type": "header", "format": "agent-memory-export", "version": 1, "contextId": "src",
              "partition": None, "exportedAt": "2024-01-01T00:00:00Z", "types": []}]
    lines += [turn_line("sess_big", n, f"turn {n} " + "x" * text_bytes) for n in range(records)]
    lines.append({"type": "end", "records": records, "originals": 0, "principals": 0, "counts": {"turn": records},
                  "skipped": {}})
    return "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines).encode()


def test_a_stream_over_lambdas_payload_goes_in_and_out_through_the_job_form(aws):
    rt, url = aws
    api = InProcessApi()
    # few large records: moto copies the whole table on every transaction, which says nothing of
    # DynamoDB, so the size comes from the records, not their number
    body = big_stream(48, 140_000)
    assert len(body) > LAMBDA_PAYLOAD  # what neither POST /import nor GET /export can carry deployed

    job = ok(api.post(f"{CTX}/import/jobs", {"size": len(body)}), 201)
    assert job["state"] == "awaiting_upload" and job["kind"] == "import"
    assert job["uploadHeaders"] == {"Content-Type": "application/x-ndjson", "Content-Length": str(len(body))}
    put = requests.put(job["uploadUrl"], data=body, headers=job["uploadHeaders"])
    assert put.status_code == 200, put.text
    started = api.post(f"{CTX}/import/jobs/{job['id']}/start")
    assert started.status == 202 and started.headers["location"] == f"{CTX}/import/jobs/{job['id']}"
    assert ok(started, 202)["state"] == "queued"
    assert ok(api.post(f"{CTX}/import/jobs/{job['id']}/start"))["state"] == "queued"  # once only
    assert run_worker(url) == 1
    done = ok(api.get(f"{CTX}/import/jobs/{job['id']}"))
    assert done["state"] == "succeeded", done
    assert done["result"]["records"] == done["result"]["written"] == 48 == done["recordsDone"]
    assert done["bytes"] == len(body)
    # the upload was read once and removed
    assert rt.upload_store.read(f"imports/{job['id']}", len(body)) is None

    started = api.post(f"{CTX}/export/jobs", {"originals": False})
    job = ok(started, 202)
    assert started.headers["location"] == f"{CTX}/export/jobs/{job['id']}"
    assert ok(api.get(f"{CTX}/export/jobs/{job['id']}"))["state"] == "queued"
    assert "downloadUrl" not in ok(api.get(f"{CTX}/export/jobs/{job['id']}"))
    run_worker(url)
    done = ok(api.get(f"{CTX}/export/jobs/{job['id']}"))
    assert done["state"] == "succeeded", done
    assert done["result"]["records"] == 48 and done["bytes"] > LAMBDA_PAYLOAD
    got = requests.get(done["downloadUrl"])  # presigned: no API key goes there
    assert got.status_code == 200 and len(got.content) == done["bytes"]
    out, src = got.content.decode().splitlines(), body.decode().splitlines()
    assert json.loads(out[0])["contextId"] == "exp"
    # every record as imported (re-keyed into this context), in key order, and the trailer
    assert [json.loads(x)["data"]["content"] for x in out[1:-1]] == [json.loads(x)["data"]["content"]
                                                                     for x in src[1:-1]]
    assert json.loads(out[-1])["records"] == 48
    # the same job file imports again, idempotently, through the inline route's validator
    again = ok(api.post("/api/v1/exp/import/jobs", {"size": len(got.content)}), 201)
    assert requests.put(again["uploadUrl"], data=got.content, headers=again["uploadHeaders"]).status_code == 200
    ok(api.post(f"{CTX}/import/jobs/{again['id']}/start"), 202)
    run_worker(url)
    result = ok(api.get(f"{CTX}/import/jobs/{again['id']}"))["result"]
    assert (result["written"], result["unchanged"]) == (0, 48)


def test_a_bad_stream_fails_the_job_naming_its_line_and_writes_nothing(aws):
    rt, url = aws
    api = InProcessApi()
    lines = big_stream(3, 10).decode().splitlines()
    lines[2] = "{not json"
    body = ("\n".join(lines) + "\n").encode()
    job = ok(api.post(f"{CTX}/import/jobs", {"size": len(body)}), 201)
    requests.put(job["uploadUrl"], data=body, headers=job["uploadHeaders"])
    ok(api.post(f"{CTX}/import/jobs/{job['id']}/start"), 202)
    run_worker(url)
    done = ok(api.get(f"{CTX}/import/jobs/{job['id']}"))
    assert done["state"] == "failed"
    assert (done["error"]["status"], done["error"]["code"], done["error"]["line"]) == (400, "invalid_export_line", 3)
    assert [r for r in rt.store.scan("c#exp#") if r.data.get("kind") == "turn"] == []
    # a job started with nothing uploaded fails, saying so
    job = ok(api.post(f"{CTX}/import/jobs", {"size": 10}), 201)
    ok(api.post(f"{CTX}/import/jobs/{job['id']}/start"), 202)
    run_worker(url)
    assert ok(api.get(f"{CTX}/import/jobs/{job['id']}"))["error"]["code"] == "upload_missing"


def test_a_redelivered_message_of_a_finished_job_changes_nothing(aws):
    rt, url = aws
    api = InProcessApi()
    ok(api.post(f"{CTX}/facts", {"text": "I live in Paris.", "infer": "none"}))
    job = ok(api.post(f"{CTX}/export/jobs"), 202)
    sqs = boto3.client("sqs", region_name="us-east-1")
    body = sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"]
    handler = _admin_handler()
    event = {"Records": [{"messageId": "m1", "body": body, "eventSource": "aws:sqs"}]}
    assert handler(event, None) == {"batchItemFailures": []}
    first = ok(api.get(f"{CTX}/export/jobs/{job['id']}"))
    assert handler(event, None) == {"batchItemFailures": []}
    again = ok(api.get(f"{CTX}/export/jobs/{job['id']}"))
    assert {k: v for k, v in again.items() if "download" not in k} == \
        {k: v for k, v in first.items() if "download" not in k}
    # a message that is not a job is a failed item (redelivered, then dead-lettered), never a crash
    bad = {"Records": [{"messageId": "m2", "body": "{}", "eventSource": "aws:sqs"}]}
    assert handler(bad, None) == {"batchItemFailures": [{"itemIdentifier": "m2"}]}


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_locally_the_job_routes_run_in_process_and_serve_the_file(api):
    ok(api.post(f"{CTX}/facts", {"text": "I live in Paris. I like tea."}))
    inline = api.get(f"{CTX}/export").text.splitlines()
    job = ok(api.post(f"{CTX}/export/jobs", {}), 202)
    get_runtime().portability_queue.join(timeout=60)
    done = ok(api.get(f"{CTX}/export/jobs/{job['id']}"))
    assert done["state"] == "succeeded" and done["downloadUrl"].startswith("http")
    path = done["downloadUrl"].split("//", 1)[1].split("/", 1)[1]
    got = api.get("/" + path)
    assert got.status == 200 and got.headers["content-type"] == "application/x-ndjson"
    assert got.body.decode().splitlines()[1:-1] == inline[1:-1]
    assert json.loads(got.body.decode().splitlines()[-1])["records"] == len(inline) - 2
    # a URL with another signature, or another object, is refused
    assert api.get("/" + path.replace("signature=", "signature=0")).status == 403
    assert api.get("/" + path.replace(job["id"], job["id"][:-1] + "0")).status == 403
    # and imports the same way into another context
    data = got.body
    job = ok(api.post("/api/v1/copy/import/jobs", {"size": len(data)}), 201)
    path = job["uploadUrl"].split("//", 1)[1].split("/", 1)[1]
    put = api.request("PUT", "/" + path, raw=data, headers={"content-type": "application/x-ndjson"})
    assert put.status == 200, put.text
    ok(api.post(f"/api/v1/copy/import/jobs/{job['id']}/start"), 202)
    get_runtime().portability_queue.join(timeout=60)
    done = ok(api.get(f"/api/v1/copy/import/jobs/{job['id']}"))
    assert done["state"] == "succeeded" and done["result"]["written"] == len(inline) - 2
    def facts(ctx: str) -> list[tuple[str, str, str]]:
        return sorted((a["id"], a["key"], a["value"]) for a in ok(api.get(f"{ctx}/attributes"))["items"])

    assert facts("/api/v1/copy") == facts(CTX) and len(facts(CTX)) == 2


@pytest.mark.parametrize("store_kind", ["sqlite"])
@pytest.mark.parametrize("body,status,code", [
    ({"bogus": 1}, 400, None),
    ({"partition": "no spaces"}, 400, None),
    ({"originals": "yes"}, 400, None),
    ([1], 400, None),
])
def test_a_bad_export_job_request_is_a_problem_and_queues_nothing(api, body, status, code):
    r = api.post(f"{CTX}/export/jobs", body)
    assert r.status == status and r.headers["content-type"] == "application/problem+json", r.text
    assert list(get_runtime().store.scan("c#~portability#")) == []


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_bad_import_job_requests_are_problems(api):
    for body, status in (({}, 400), ({"size": 0}, 400), ({"size": "10"}, 400), ({"size": 2**40}, 413)):
        r = api.post(f"{CTX}/import/jobs", body)
        assert r.status == status and r.headers["content-type"] == "application/problem+json", (body, r.text)
    assert api.post(f"{CTX}/import/jobs/job_nothing/start").status == 404
    assert api.get(f"{CTX}/import/jobs/job_nothing").status == 404
    export = ok(api.post(f"{CTX}/export/jobs"), 202)
    get_runtime().portability_queue.join(timeout=60)
    # an export job is not an import job
    assert api.get(f"{CTX}/import/jobs/{export['id']}").status == 404
    assert api.post(f"{CTX}/import/jobs/{export['id']}/start").status == 404


KEYS = {"admin": "key-admin-0000000000", "rita": "key-rita-00000000000", "other": "key-other-admin-0000"}


@pytest.mark.parametrize("principals_setting", [[
    {"key": KEYS["admin"], "principal": "ops", "admin": True},
    {"key": KEYS["rita"], "principal": "rita"},
    # an admin of another context only
    {"key": KEYS["other"], "principal": "olga", "admin": True, "contexts": ["other"]}]])
@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_no_key_but_an_admin_of_the_context_starts_reads_or_downloads_a_job(api):
    as_ = {name: {"authorization": f"Bearer {key}"} for name, key in KEYS.items()}
    ok(api.post(f"{CTX}/facts", {"text": "I live in Paris."}, headers=as_["admin"]))
    export = ok(api.post(f"{CTX}/export/jobs", headers=as_["admin"]), 202)
    imp = ok(api.post(f"{CTX}/import/jobs", {"size": 10}, headers=as_["admin"]), 201)
    get_runtime().portability_queue.join(timeout=60)
    for who in ("rita", "other"):
        h = as_[who]
        assert api.post(f"{CTX}/export/jobs", headers=h).status == 403
        assert api.post(f"{CTX}/export/jobs", {"includePrincipals": True}, headers=h).status == 403
        assert api.post(f"{CTX}/import/jobs", {"size": 10}, headers=h).status == 403
        assert api.get(f"{CTX}/export/jobs/{export['id']}", headers=h).status == 403
        assert api.get(f"{CTX}/import/jobs/{imp['id']}", headers=h).status == 403
        assert api.post(f"{CTX}/import/jobs/{imp['id']}/start", headers=h).status == 403
    # the other context's admin, under its own context, does not find this context's jobs
    assert api.get(f"/api/v1/other/export/jobs/{export['id']}", headers=as_["other"]).status == 404
    assert api.post(f"/api/v1/other/import/jobs/{imp['id']}/start", headers=as_["other"]).status == 404
    # nor does an admin of every context find a job under another context's path
    assert api.get(f"/api/v1/other/export/jobs/{export['id']}", headers=as_["admin"]).status == 404
    # no key at all: 401
    assert api.get(f"{CTX}/export/jobs/{export['id']}").status == 401
    assert ok(api.get(f"{CTX}/export/jobs/{export['id']}", headers=as_["admin"]))["state"] == "succeeded"


def test_principals_setting_parses():
    # the escalation test's keys are valid configuration (a typo would test an open server)
    assert len(parse_principals(None, [{"key": KEYS["other"], "principal": "olga", "admin": True,
                                        "contexts": ["other"]}])) == 1


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_both_python_clients_move_a_context_through_the_job_form(server):
    import asyncio

    from agent_memory.client import AgentMemory, AsyncAgentMemory, ValidationError

    src = AgentMemory("exp", server)
    src.remember("I live in Paris. I like tea.")
    seen: list[str] = []
    data = src.export_job(poll_interval=0.05, on_progress=lambda job: seen.append(job.state))
    assert seen[-1] == "succeeded"
    # the same records (the trailer's skipped rows count audit rows, which arrive meanwhile)
    assert data.decode().splitlines()[1:-1] == list(src.export_context())[1:-1]
    result = AgentMemory("copy", server).import_job(data, poll_interval=0.05)
    assert result.written == result.records > 0 and result.context_id == "copy"
    with pytest.raises(ValidationError) as bad:  # the inline route's problem, line included
        AgentMemory("copy", server).import_job(data.replace(b'"type":"end"', b'"type":"nope"'),
                                                      poll_interval=0.05)
    assert bad.value.code == "invalid_export_line" and bad.value.problem["line"] == len(data.splitlines())

    async def twin() -> None:
        async with AsyncAgentMemory("exp", server) as client:
            again = await client.export_job(poll_interval=0.05)
            assert again.splitlines()[1:-1] == data.splitlines()[1:-1]
            result = await client.import_job(again, poll_interval=0.05)
            assert result.written == 0 and result.unchanged == result.records

    asyncio.run(twin())


class RefusingSqs:
    """An SQS client whose sends fail (throttled)."""

    def send_message(self, **kw: Any) -> Any:
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "RequestThrottled", "Message": "slow down"}}, "SendMessage")


def test_a_queue_that_refuses_is_a_503_and_an_import_can_be_started_again(aws):
    from agent_memory.adapters.portability_queues import SqsPortabilityQueue

    rt, url = aws
    api = InProcessApi()
    body = big_stream(2, 10)
    job = ok(api.post(f"{CTX}/import/jobs", {"size": len(body)}), 201)
    requests.put(job["uploadUrl"], data=body, headers=job["uploadHeaders"])
    working = rt.portability_queue
    rt.__dict__["portability_queue"] = SqsPortabilityQueue(url, client=RefusingSqs())
    r = api.post(f"{CTX}/export/jobs")
    assert r.status == 503 and r.headers["content-type"] == "application/problem+json" and "retry-after" in r.headers
    assert r.json()["code"] == "queue_unavailable"
    r = api.post(f"{CTX}/import/jobs/{job['id']}/start")
    assert r.status == 503 and r.json()["code"] == "queue_unavailable"
    assert ok(api.get(f"{CTX}/import/jobs/{job['id']}"))["state"] == "awaiting_upload"  # nothing lost
    rt.__dict__["portability_queue"] = working
    ok(api.post(f"{CTX}/import/jobs/{job['id']}/start"), 202)
    run_worker(url)
    assert ok(api.get(f"{CTX}/import/jobs/{job['id']}"))["result"]["written"] == 2
