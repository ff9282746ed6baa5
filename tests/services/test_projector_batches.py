"""The projector writes a stream batch as one index request: records are collapsed to each
unit's newest state first (Serverless: one search for stored copies, then one bulk)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from agent_memory.adapters.dynamodb_store import _to_item
from agent_memory.adapters.opensearch.index import OpenSearchIndex
from agent_memory.config import load_settings
from agent_memory.http.local_server import LocalLambdaContext
from agent_memory.ports import Record
from agent_memory.runtime import Runtime, set_runtime

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "search"))
from nrt_double import NrtCluster  # noqa: E402

INDEX = "tenant1-memory"


def projector_handler():
    spec = importlib.util.spec_from_file_location("projector_app", REPO / "functions/projector/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler


def turn(i: int, version: int, text: str) -> Record:
    data = {"kind": "thread_turn", "id": f"turn-{i}", "contextId": "acme", "threadId": "t1", "text": text,
            "turnIndex": i, "createdAt": "2026-01-01T00:00:00Z"}
    return Record(pk="c#acme#default#thread-turns#t1", sk=f"{i:012d}", data=data, version=version)


def stream_record(seq: int, name: str, new: Record | None, old: Record | None) -> dict:
    images = {"SequenceNumber": str(seq), "ApproximateCreationDateTime": 1_700_000_000,
              "StreamViewType": "NEW_AND_OLD_IMAGES"}
    if new is not None:
        images["NewImage"] = _to_item(new)
    if old is not None:
        images["OldImage"] = _to_item(old)
    return {"eventID": str(seq), "eventName": name, "eventSource": "aws:dynamodb", "dynamodb": images}


@pytest.fixture(params=["aoss", "es"])
def cluster(request, tmp_path):
    cluster = NrtCluster(service=request.param, allowed_prefix="tenant1-")
    rt = Runtime(load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"),
                                    "AGENT_MEMORY_CURSOR_SECRET": "test", "AWS_REGION": "us-east-1"}))
    rt.__dict__["search"] = OpenSearchIndex("https://nrt.invalid", INDEX, rt.embedder, service=request.param,
                                            client=cluster.client())
    set_runtime(rt)
    yield cluster
    set_runtime(None)


def test_a_100_record_batch_is_one_bulk_request_with_each_units_newest_state(cluster):
    records, seq = [], 0
    for i in range(40):  # 40 inserts, each changed once more in the same batch
        seq += 1
        records.append(stream_record(seq, "INSERT", turn(i, 1, f"first draft {i}"), None))
    for i in range(40):
        seq += 1
        records.append(stream_record(seq, "MODIFY", turn(i, 2, f"final text {i}"), turn(i, 1, f"first draft {i}")))
    for i in range(40, 50):  # written and removed within the batch
        seq += 1
        records.append(stream_record(seq, "INSERT", turn(i, 1, f"gone {i}"), None))
    for i in range(40, 50):
        seq += 1
        records.append(stream_record(seq, "REMOVE", None, turn(i, 1, f"gone {i}")))
    assert len(records) == 100

    response = projector_handler()({"Records": records}, LocalLambdaContext("projector"))
    assert response == {"batchItemFailures": []}
    writes = [p for p in cluster.paths() if "_bulk" in p]
    assert writes == [f"POST /{INDEX}/_bulk"]
    searches = [p for p in cluster.paths() if p.endswith("_search")]
    assert len(searches) == (1 if cluster.service == "aoss" else 0)  # Serverless: one copies lookup
    docs = cluster.documents(INDEX)
    assert sorted(d["text"] for d in docs) == sorted(f"final text {i}" for i in range(40))
    cluster.refresh()
    assert len(cluster.documents(INDEX, live=False)) == 40


def test_a_failed_write_reports_every_record_of_the_batch(cluster, monkeypatch):
    from agent_memory.runtime import get_runtime

    def broken(*a, **kw):
        raise RuntimeError("index unavailable")

    monkeypatch.setattr(get_runtime().search, "write", broken)
    records = [stream_record(i + 1, "INSERT", turn(i, 1, f"text {i}"), None) for i in range(3)]
    response = projector_handler()({"Records": records}, LocalLambdaContext("projector"))
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == ["1", "2", "3"]


def test_projection_lag_is_published_as_an_embedded_metric(cluster, capsys, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "projector")  # metrics flush inside an invocation
    records = [stream_record(1, "INSERT", turn(0, 1, "hello"), None)]
    projector_handler()({"Records": records}, LocalLambdaContext("projector"))
    out = capsys.readouterr().out
    assert '"ProjectionLag"' in out and '"AgentMemory"' in out
