"""``agent-memory redrive``: dead letters (moto SQS) name failed stream batches (moto stream);
the batch is re-read from the stream and re-projected from the items' current state, or,
once the stream no longer holds it, the affected contexts are reindexed."""

from __future__ import annotations

import json

import boto3
import pytest
from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.adapters.stream_dead_letters import StreamDeadLetters
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.ports import SearchFilter
from agent_memory.services.operations.redrive import redrive
from tests.support.streams import STREAMS_ENDPOINT, stream_shards

ACME = RequestContext(context_id="acme", principal="p", admin=True)
TURNS = SearchFilter(context_id="acme", kinds=["turn"])


@pytest.fixture
def aws(stream_runtime):
    """The stream runtime and the projector's dead-letter queue (moto SQS)."""
    queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="projector-dlq")["QueueUrl"]
    return stream_runtime, queue


def stream_shard(table: str) -> tuple[str, str, list[str]]:
    """The stream ARN, its first shard and the sequence numbers on it."""
    arn, shards = stream_shards(table)
    shard, records = shards[0]
    return arn, shard, [r["dynamodb"]["SequenceNumber"] for r in records]


def dead_letter(queue: str, arn: str, shard: str, start: str, end: str) -> None:
    """What Lambda's on-failure destination sends for a DynamoDB stream batch."""
    body = {"version": "1.0", "requestContext": {"condition": "RetryAttemptsExhausted"},
            "DDBStreamBatchInfo": {"shardId": shard, "startSequenceNumber": start, "endSequenceNumber": end,
                                   "batchSize": 1, "streamArn": arn}}
    boto3.client("sqs", region_name="us-east-1").send_message(QueueUrl=queue, MessageBody=json.dumps(body))


def source(queue: str) -> StreamDeadLetters:
    return StreamDeadLetters(queue, region="us-east-1", streams_endpoint=STREAMS_ENDPOINT)


class TrimmedStream:
    """A stream past its 24 hours (moto keeps stream records forever): the batch is gone."""

    def get_shard_iterator(self, **kw):
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "TrimmedDataAccessException", "Message": "trimmed"}},
                          "GetShardIterator")


def queue_depth(queue: str) -> int:
    attrs = boto3.client("sqs", region_name="us-east-1").get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    return sum(int(v) for v in attrs["Attributes"].values())


def test_a_dead_lettered_batch_is_reread_from_the_stream_and_projected(aws):
    rt, queue = aws
    rt.facts.write(ACME, WriteFactsRequest(text="I keep bees in the garden.", infer="none"))
    assert fused_search(rt.search, "bees", TURNS, k=5) == []  # the projector's batch failed
    arn, shard, seqs = stream_shard(rt.settings.table_name)
    dead_letter(queue, arn, shard, seqs[0], seqs[-1])

    stats = redrive(source(queue), rt.base_store, rt.search)
    assert stats.letters == 1 and stats.replayed_records == len(seqs) and stats.reindexed_contexts == []
    assert [h.unit.text for h in fused_search(rt.search, "bees", TURNS, k=5)] == ["I keep bees in the garden."]
    assert queue_depth(queue) == 0


def test_a_batch_the_stream_no_longer_holds_reindexes_the_named_contexts(aws):
    rt, queue = aws
    rt.facts.write(ACME, WriteFactsRequest(text="I keep bees in the garden.", infer="none"))
    other = RequestContext(context_id="globex", principal="p", admin=True)
    rt.facts.write(other, WriteFactsRequest(text="I keep goats.", infer="none"))
    arn, shard, seqs = stream_shard(rt.settings.table_name)
    dead_letter(queue, arn, shard, seqs[0], seqs[-1])

    letters = StreamDeadLetters(queue, region="us-east-1", streams=TrimmedStream())
    told: list[tuple[str, int]] = []
    stats = redrive(letters, rt.base_store, rt.search, contexts=["acme"],
                    progress=lambda phase, n: told.append((phase, n)))
    assert stats.reindexed_contexts == ["acme"]
    assert told[0] == ("dead letters", 1) and {phase for phase, _ in told[1:]} == {"reindex acme"}
    assert fused_search(rt.search, "goats", SearchFilter(context_id="globex", kinds=["turn"]), k=5) == []
    assert [h.unit.text for h in fused_search(rt.search, "bees", TURNS, k=5)] == ["I keep bees in the garden."]
    assert queue_depth(queue) == 0


def test_without_named_contexts_every_context_in_the_table_is_reindexed(aws):
    rt, queue = aws
    rt.facts.write(ACME, WriteFactsRequest(text="I keep bees in the garden.", infer="none"))
    rt.facts.write(RequestContext(context_id="globex", principal="p", admin=True),
                   WriteFactsRequest(text="I keep goats.", infer="none"))
    arn, shard, seqs = stream_shard(rt.settings.table_name)
    dead_letter(queue, arn, shard, seqs[0], seqs[-1])

    stats = redrive(StreamDeadLetters(queue, region="us-east-1", streams=TrimmedStream()), rt.base_store, rt.search)
    assert sorted(stats.reindexed_contexts) == ["acme", "globex"]
    assert fused_search(rt.search, "goats", SearchFilter(context_id="globex", kinds=["turn"]), k=5)


def test_the_redrive_command(aws, monkeypatch, capsys, tmp_path):
    from agent_memory.interfaces.cli import main

    rt, queue = aws
    rt.facts.write(ACME, WriteFactsRequest(text="I keep bees in the garden.", infer="none"))
    arn, shard, seqs = stream_shard(rt.settings.table_name)
    dead_letter(queue, arn, shard, seqs[0], seqs[-1])
    # moto matches stream calls only at this endpoint (newer botocore routes ARN calls elsewhere)
    monkeypatch.setitem(StreamDeadLetters.__init__.__kwdefaults__, "streams_endpoint", STREAMS_ENDPOINT)
    for key, value in {"AGENT_MEMORY_STORE": "dynamodb", "AGENT_MEMORY_TABLE": rt.settings.table_name,
                       "AGENT_MEMORY_CURSOR_SECRET": "test", "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    assert main(["redrive", "--queue-url", queue, "--data-dir", str(tmp_path / "data")]) == 0
    assert "1 dead letters" in capsys.readouterr().out
    assert queue_depth(queue) == 0
