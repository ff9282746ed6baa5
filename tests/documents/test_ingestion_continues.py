"""Ingestion that continues: a worker that runs out of time commits what it has and hands the
rest on as a new message, so a long document spends none of the queue's receives.

The SQS worker function (functions/ingestion/app.py) runs against moto SQS with the queue's
redrive policy as template.yaml sets it; the test drives the queue as Lambda's event source
does (receive, invoke, delete what did not fail) and each invocation's remaining time runs
out after three model calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agent_memory.kernel import storage_keys as keys
from agent_memory.models.documents import DocumentUpload
from agent_memory.runtime import set_runtime
from agent_memory.services.documents.ingestion import IngestionJob
from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer
from tests.documents.test_ingestion import RC, _runtime, ingestion_handler, policies


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(Behaviour(latency_ms=5, jitter_ms=2, seed=3)) as fake:
        yield fake


class ShrinkingContext:
    """A Lambda context whose remaining time falls by ``per_call_ms`` with each model call."""

    def __init__(self, calls: list[int], start_ms: int, per_call_ms: int):
        self.calls, self.first, self.start_ms, self.per_call_ms = calls, len(calls), start_ms, per_call_ms
        self.function_name = "IngestionFunction"
        self.aws_request_id = "req"
        self.invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:IngestionFunction"
        self.memory_limit_in_mb = 1024

    def get_remaining_time_in_millis(self) -> int:
        return self.start_ms - self.per_call_ms * (len(self.calls) - self.first)


def drive(sqs, url: str, handler, context_for) -> list[dict]:
    """Lambda's SQS event source, one message a batch: receive, invoke, delete unless reported."""
    deliveries = []
    for _ in range(20):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, AttributeNames=["ApproximateReceiveCount"],
                                  WaitTimeSeconds=0).get("Messages", [])
        if not got:
            return deliveries
        message = got[0]
        event = {"Records": [{"messageId": message["MessageId"], "body": message["Body"], "eventSource": "aws:sqs"}]}
        result = handler(event, context_for())
        failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
        if message["MessageId"] not in failed:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        deliveries.append({"body": json.loads(message["Body"]), "failed": bool(failed),
                           "receives": int(message["Attributes"]["ApproximateReceiveCount"])})
    raise AssertionError("the queue never drained")


def test_a_document_needing_three_invocations_ends_ready_with_no_failed_receive(tmp_path, fake_model, monkeypatch):
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        import boto3

        sqs = boto3.client("sqs", region_name="us-east-1")
        dlq = sqs.create_queue(QueueName="ingestion-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        url = sqs.create_queue(QueueName="ingestion", Attributes={
            "VisibilityTimeout": "1800",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"})})["QueueUrl"]
        rt = _runtime(tmp_path, fake_model, concurrency=1, AGENT_MEMORY_INGESTION_QUEUE_URL=url,
                      AWS_REGION="us-east-1")
        try:
            calls: list[int] = []
            extract = rt.facts.extract
            monkeypatch.setattr(rt.facts, "extract", lambda *a, **k: calls.append(1) or extract(*a, **k))
            doc_id = rt.documents.ingest(RC, DocumentUpload(text=policies(9))).document.id
            assert rt.store.get(keys.documents_pk(RC), doc_id).data["chunkCount"] == 9
            # 200 s left at the start, 50 s a call: after three calls under a minute is left.
            deliveries = drive(sqs, url, ingestion_handler(), lambda: ShrinkingContext(calls, 200_000, 50_000))

            doc = rt.store.get(keys.documents_pk(RC), doc_id).data
            assert doc["status"] == "ready" and doc["chunksDone"] == 9
            assert len(deliveries) == 3 and len(calls) == 9  # three invocations, each chunk extracted once
            assert [d["failed"] for d in deliveries] == [False, False, False]
            assert [d["receives"] for d in deliveries] == [1, 1, 1]  # no receive spent on running out of time
            assert [(d["body"].get("continuation", 0), d["body"].get("progress", 0)) for d in deliveries] == [
                (0, 0), (1, 3), (2, 6)]
            assert sqs.receive_message(QueueUrl=dlq, WaitTimeSeconds=0).get("Messages", []) == []
        finally:
            set_runtime(None)


def test_out_of_time_without_progress_is_a_failed_delivery(tmp_path, fake_model):
    """A delivery that committed nothing is reported failed (it counts towards the dead-letter
    queue), and so is a continuation that could not pass the progress it was handed."""
    rt = _runtime(tmp_path, fake_model, concurrency=2)
    try:
        sent: list[IngestionJob] = []
        rt.__dict__["ingestion_queue"] = type("Q", (), {"send": staticmethod(sent.append)})()
        rt.documents.ingest(RC, DocumentUpload(text=policies(5)))
        job = sent.pop()
        handler = ingestion_handler()
        stalled = job.continued(0)
        event = {"Records": [{"messageId": "m1", "body": json.dumps(stalled.to_message())}]}
        assert handler(event, ShrinkingContext([], 30_000, 0)) == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
        assert sent == []  # nothing handed on
    finally:
        set_runtime(None)
