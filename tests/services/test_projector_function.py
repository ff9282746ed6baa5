"""The projector Lambda: DynamoDB stream records (read from moto's stream of the table built
from template.yaml) reach the search index; a record that cannot be projected fails alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import boto3
import pytest
from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.config import load_settings
from agent_memory.http.local_server import LambdaContext
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.ports import SearchFilter
from agent_memory.runtime import Runtime, set_runtime

REPO = Path(__file__).resolve().parents[2]
STREAM_FIELDS = ("Keys", "NewImage", "OldImage", "SequenceNumber", "StreamViewType")


def projector_handler():
    spec = importlib.util.spec_from_file_location("projector_app", REPO / "functions/projector/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler


def stream_event(table: str) -> dict:
    """Every record on the table's stream, shaped as Lambda's DynamoDB event source sends them."""
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    # An explicit endpoint: newer botocore routes ARN calls to an endpoint moto does not match.
    streams = boto3.client("dynamodbstreams", region_name="us-east-1",
                           endpoint_url="https://streams.dynamodb.us-east-1.amazonaws.com")
    arn = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    records = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        for r in streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]:
            records.append({"eventID": r["eventID"], "eventName": r["eventName"], "eventSource": "aws:dynamodb",
                            "awsRegion": "us-east-1", "eventSourceARN": arn,
                            "dynamodb": {k: v for k, v in r["dynamodb"].items() if k in STREAM_FIELDS}})
    return {"Records": records}


@pytest.fixture
def stream_runtime(tmp_path):
    from moto import mock_aws

    from agent_memory.adapters.dynamodb_table import create_table_from_template

    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_STORE": "dynamodb",
                                  "AGENT_MEMORY_PROJECTION": "stream", "AGENT_MEMORY_CURSOR_SECRET": "test",
                                  "AWS_REGION": "us-east-1", "AGENT_MEMORY_TABLE": "agent-memory-test"})
    with mock_aws():
        create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), settings.table_name)
        runtime = Runtime(settings)
        set_runtime(runtime)
        yield runtime
    set_runtime(None)


def test_stream_records_reach_the_index_through_the_projector(stream_runtime):
    rt = stream_runtime
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    rt.facts.write(ctx, WriteFactsRequest(text="I live in London.", observed_at="2026-03-01T00:00:00Z"))
    rt.facts.write(ctx, WriteFactsRequest(text="I moved to Berlin.", observed_at="2026-05-01T00:00:00Z"))
    facts = SearchFilter(context_id="acme", kinds=["attribute"])
    assert fused_search(rt.search, "location", facts, k=5) == []  # stream mode: nothing projected inline

    event = stream_event(rt.settings.table_name)
    assert len(event["Records"]) >= 6
    response = projector_handler()(event, LambdaContext("projector"))
    assert response == {"batchItemFailures": []}

    assert [h.unit.text for h in fused_search(rt.search, "location", facts, k=5)] == ["User location: Berlin"]
    past = SearchFilter(context_id="acme", kinds=["attribute"], as_of="2026-04-01T00:00:00Z")
    assert [h.unit.text for h in fused_search(rt.search, "location", past, k=5)] == ["User location: London"]
    turns = fused_search(rt.search, "moved Berlin", SearchFilter(context_id="acme", kinds=["turn"]), k=5)
    assert "I moved to Berlin." in [h.unit.text for h in turns]

    # Replaying the same batch (Lambda retries) changes nothing: projection is idempotent.
    assert projector_handler()(event, LambdaContext("projector")) == {"batchItemFailures": []}
    assert [h.unit.text for h in fused_search(rt.search, "location", facts, k=5)] == ["User location: Berlin"]


def test_a_record_that_cannot_be_projected_is_reported_alone(stream_runtime):
    rt = stream_runtime
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    rt.facts.write(ctx, WriteFactsRequest(text="I live in Oslo.", infer="none"))
    event = stream_event(rt.settings.table_name)
    broken = dict(event["Records"][0])
    broken["eventID"] = "broken-1"
    broken["dynamodb"] = {**broken["dynamodb"], "SequenceNumber": "999999999999999999999",
                          "NewImage": {"pk": {"S": "x"}, "sk": {"S": "y"}, "version": {"N": "1"},
                                       "data": {"S": "{not json"}}}
    response = projector_handler()({"Records": [*event["Records"], broken]}, LambdaContext("projector"))
    # Lambda retries (then dead-letters) only the failed record, named by its sequence number.
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == ["999999999999999999999"]
    turns = fused_search(rt.search, "Oslo", SearchFilter(context_id="acme", kinds=["turn"]), k=5)
    assert [h.unit.text for h in turns] == ["I live in Oslo."]
