"""The projector Lambda: DynamoDB stream records (read from moto's stream of the table built
from template.yaml) reach the search index; a record that cannot be projected fails alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.http.local_server import LocalLambdaContext
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.ports import SearchFilter
from tests.support.streams import REGION, stream_shards

REPO = Path(__file__).resolve().parents[2]
STREAM_FIELDS = ("Keys", "NewImage", "OldImage", "SequenceNumber", "StreamViewType")


def projector_handler():
    spec = importlib.util.spec_from_file_location("projector_app", REPO / "functions/projector/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler


def stream_event(table: str) -> dict:
    """Every record on the table's stream, shaped as Lambda's DynamoDB event source sends them."""
    arn, shards = stream_shards(table)
    return {"Records": [{"eventID": r["eventID"], "eventName": r["eventName"], "eventSource": "aws:dynamodb",
                         "awsRegion": REGION, "eventSourceARN": arn,
                         "dynamodb": {k: v for k, v in r["dynamodb"].items() if k in STREAM_FIELDS}}
                        for _, records in shards for r in records]}


def test_stream_records_reach_the_index_through_the_projector(stream_runtime):
    rt = stream_runtime
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    rt.facts.write(ctx, WriteFactsRequest(text="I live in London.", observed_at="2026-03-01T00:00:00Z"))
    rt.facts.write(ctx, WriteFactsRequest(text="I moved to Berlin.", observed_at="2026-05-01T00:00:00Z"))
    facts = SearchFilter(context_id="acme", kinds=["attribute"])
    assert fused_search(rt.search, "location", facts, k=5) == []  # stream mode: nothing projected inline

    event = stream_event(rt.settings.table_name)
    assert len(event["Records"]) >= 6
    response = projector_handler()(event, LocalLambdaContext("projector"))
    assert response == {"batchItemFailures": []}

    assert [h.unit.text for h in fused_search(rt.search, "location", facts, k=5)] == ["User location: Berlin"]
    past = SearchFilter(context_id="acme", kinds=["attribute"], as_of="2026-04-01T00:00:00Z")
    assert [h.unit.text for h in fused_search(rt.search, "location", past, k=5)] == ["User location: London"]
    turns = fused_search(rt.search, "moved Berlin", SearchFilter(context_id="acme", kinds=["turn"]), k=5)
    assert "I moved to Berlin." in [h.unit.text for h in turns]

    # Replaying the same batch (Lambda retries) changes nothing: projection is idempotent.
    assert projector_handler()(event, LocalLambdaContext("projector")) == {"batchItemFailures": []}
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
    response = projector_handler()({"Records": [*event["Records"], broken]}, LocalLambdaContext("projector"))
    # Lambda retries (then dead-letters) only the failed record, named by its sequence number.
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == ["999999999999999999999"]
    turns = fused_search(rt.search, "Oslo", SearchFilter(context_id="acme", kinds=["turn"]), k=5)
    assert [h.unit.text for h in turns] == ["I live in Oslo."]
