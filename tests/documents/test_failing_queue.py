"""A failing ingestion queue (moto SQS with faults injected: throttled, refused, gone,
unreachable): a synchronous upload that cannot be queued answers 503 with Retry-After and
stores nothing; a completed presigned upload stays visibly ``uploading`` and is queued by
the repeated call once the queue takes jobs again. Never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from agent_memory.adapters.ingestion_queues import SqsIngestionQueue
from agent_memory.runtime import Runtime, set_runtime
from tests.conftest import InProcessApi, make_settings, serialise_moto

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
BUCKET = "agent-memory-uploads-test"
TEXT = "# Travel policy\n\nBook trains, not flights.\n\n## Expenses\n\nSubmit receipts within 30 days.\n"

FAULTS = {
    "throttled": lambda: ClientError({"Error": {"Code": "RequestThrottled", "Message": "slow down"}}, "SendMessage"),
    "refused": lambda: ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "SendMessage"),
    "gone": lambda: ClientError({"Error": {"Code": "AWS.SimpleQueueService.NonExistentQueue", "Message": "x"}},
                                "SendMessage"),
    "unreachable": lambda: EndpointConnectionError(endpoint_url="https://sqs.us-east-1.amazonaws.com"),
}


class FaultySqs:
    """moto's SQS client, failing ``send_message`` while ``fault`` is set."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.fault: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def send_message(self, **kw: Any) -> Any:
        if self.fault is not None:
            raise FAULTS[self.fault]()
        return self.inner.send_message(**kw)


@pytest.fixture
def queued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Runtime, FaultySqs, str]]:
    from moto import mock_aws

    serialise_moto(monkeypatch)
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="ingestion")["QueueUrl"]
        faulty = FaultySqs(sqs)
        rt = Runtime(replace(make_settings(tmp_path), upload_bucket=BUCKET, ingestion_queue_url=url))
        rt.__dict__["ingestion_queue"] = SqsIngestionQueue(url, client=faulty)
        set_runtime(rt)
        yield rt, faulty, url
    set_runtime(None)


def jobs(url: str) -> list[dict]:
    messages = boto3.client("sqs", region_name="us-east-1").receive_message(
        QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_an_upload_that_cannot_be_queued_is_503_and_stores_nothing(queued, fault):
    rt, faulty, url = queued
    api = InProcessApi()
    faulty.fault = fault
    r = api.post(DOCS, {"text": TEXT, "title": "Travel"})
    assert r.status == 503 and r.headers.get("retry-after"), r.text
    assert r.json()["code"] == "queue_unavailable"
    assert api.get(DOCS).json()["documents"] == []
    assert not [rec for rec in rt.base_store.scan("c#acme#")], "the refused upload left records"
    faulty.fault = None  # the retried request succeeds and is queued once
    again = api.post(DOCS, {"text": TEXT, "title": "Travel"})
    assert again.status in (200, 201, 202), again.text
    assert [j["document_id"] for j in jobs(url)] == [again.json()["id"]]


def test_a_completed_upload_the_queue_refuses_stays_uploading_and_the_repeat_queues_it(queued):
    rt, faulty, url = queued
    api = InProcessApi()
    ticket = api.post(f"{DOCS}/uploads", {"size": len(TEXT.encode()), "title": "Travel"}).json()
    doc_id = ticket["document"]["id"] if "document" in ticket else ticket["id"]
    boto3.client("s3", region_name="us-east-1").put_object(Bucket=BUCKET, Key=f"documents/{doc_id}", Body=TEXT)
    faulty.fault = "throttled"
    r = api.post(f"{DOCS}/{doc_id}/complete")
    assert r.status == 503 and r.headers.get("retry-after") and r.json()["code"] == "queue_unavailable"
    assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "uploading"  # visibly pending
    assert jobs(url) == []
    faulty.fault = None
    assert api.post(f"{DOCS}/{doc_id}/complete").status == 202
    assert [j["document_id"] for j in jobs(url)] == [doc_id]
