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


def visible(queue: str) -> int:
    attrs = boto3.client("sqs", region_name="us-east-1").get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attrs["Attributes"]["ApproximateNumberOfMessages"])


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


# --- the projector's scheduled redrive: catch-up without an operator ---------------------


class DownIndex:
    """The runtime's index while ``down``: every index call fails as an unreachable one does."""

    def __init__(self, inner):
        self.inner = inner
        self.down = True
        self.calls = 0

    def __getattr__(self, name):
        from agent_memory.adapters.search_breaker import GUARDED
        from agent_memory.ports import SearchUnavailable

        value = getattr(self.inner, name)
        if name not in GUARDED:
            return value

        def call(*args, **kwargs):
            self.calls += 1
            if self.down:
                raise SearchUnavailable("refused", "connection refused")
            return value(*args, **kwargs)

        return call


@pytest.fixture
def outage(aws):
    from agent_memory.adapters.search_breaker import CircuitBreakingSearchIndex

    rt, queue = aws
    down = DownIndex(rt.search)
    clock = [1000.0]
    breaker = CircuitBreakingSearchIndex(down, failures_to_open=2, cool_down_s=30, clock=lambda: clock[0])
    rt.__dict__["search"] = breaker
    rt.__dict__["projection_dead_letters"] = source(queue)
    return rt, queue, down, breaker, clock


def scheduled(rt):
    from agent_memory.http.local_server import LocalLambdaContext
    from tests.services.test_projector_function import projector_handler

    return projector_handler()({"redrive": "dead-letters"}, LocalLambdaContext("projector"))


def test_the_projector_retries_dead_letters_and_redrives_once_search_answers(outage):
    """Search down: the stream batch fails (Lambda retries it, then dead-letters it); the
    scheduled run leaves the letter while the index fails and replays it once it answers."""
    from agent_memory.http.local_server import LocalLambdaContext
    from tests.services.test_projector_function import projector_handler, stream_event

    rt, queue, down, breaker, clock = outage
    rt.facts.write(ACME, WriteFactsRequest(text="I keep bees in the garden.", infer="none"))
    event = stream_event(rt.settings.table_name)
    failed = projector_handler()(event, LocalLambdaContext("projector"))
    assert len(failed["batchItemFailures"]) == len(event["Records"])  # retried, whole batch
    arn, shard, seqs = stream_shard(rt.settings.table_name)
    dead_letter(queue, arn, shard, seqs[0], seqs[-1])  # Lambda's on-failure destination

    assert scheduled(rt) == {"letters": 1, "replayed": 0, "expired": 0, "searchUnavailable": True}
    assert visible(queue) == 1  # handed back at once for the next run
    breaker._failures, breaker._open_until = 2, clock[0] + 30  # the breaker opens on repeated failures
    calls = down.calls
    assert scheduled(rt)["searchUnavailable"] is True and down.calls == calls  # not even probed

    down.down = False
    clock[0] += 31  # the cool-down is over: the next run probes the index
    assert scheduled(rt) == {"letters": 1, "replayed": len(seqs), "expired": 0, "searchUnavailable": False}
    assert [h.unit.text for h in fused_search(rt.search, "bees", TURNS, k=5)] == ["I keep bees in the garden."]
    assert queue_depth(queue) == 0
    assert scheduled(rt)["letters"] == 0  # nothing left: the next run is one empty receive


def test_a_scheduled_run_leaves_a_batch_older_than_the_stream_for_the_reindex(outage, caplog):
    rt, queue, down, breaker, clock = outage
    down.down = False
    rt.facts.write(ACME, WriteFactsRequest(text="I keep bees in the garden.", infer="none"))
    arn, shard, seqs = stream_shard(rt.settings.table_name)
    dead_letter(queue, arn, shard, seqs[0], seqs[-1])
    rt.__dict__["projection_dead_letters"] = StreamDeadLetters(queue, region="us-east-1", streams=TrimmedStream())
    assert scheduled(rt) == {"letters": 1, "replayed": 0, "expired": 1, "searchUnavailable": False}
    assert queue_depth(queue) == 1  # still there for `agent-memory redrive`, which reindexes
    assert "agent-memory redrive" in caplog.text


def test_a_scheduled_run_stops_taking_letters_when_its_time_runs_short(outage):
    from agent_memory.services.operations.redrive import redrive_when_search_answers

    rt, queue, down, breaker, clock = outage
    down.down = False
    rt.facts.write(ACME, WriteFactsRequest(text="I keep bees in the garden.", infer="none"))
    arn, shard, seqs = stream_shard(rt.settings.table_name)
    for _ in range(3):
        dead_letter(queue, arn, shard, seqs[0], seqs[-1])
    handled = iter([False, True])
    stats = redrive_when_search_answers(source(queue), rt.base_store, rt.search, should_stop=lambda: next(handled))
    assert stats.letters == 1 and stats.stopped_early
    assert queue_depth(queue) == 2 and visible(queue) >= 1  # the one it stopped at is handed back

