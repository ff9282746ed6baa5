"""Asynchronous document ingestion (``services/documents/ingestion.py``): extraction runs in parallel
against the slow fake model (observed from its side), chunks are searchable as they commit,
a redelivered job is idempotent, a delete while ingesting stops the work and leaves nothing,
a failing model ends ``failed`` with a problem, and the SQS worker function (moto SQS)
reports partial batch failures."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.config import load_settings
from agent_memory.kernel import storage_keys as keys
from agent_memory.models.documents import DocumentUpload
from agent_memory.ports import Record, SearchFilter
from agent_memory.runtime import Runtime, set_runtime
from agent_memory.services.documents.ingestion import IngestionInterrupted, IngestionJob
from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer
from tests.conftest import TEST_SECRET, InProcessApi

REPO = Path(__file__).resolve().parents[2]
DOCS = "/api/v1/acme/documents"
RC = RequestContext(context_id="acme", principal="local-admin", admin=True)
CHAT = "/v1/chat/completions"


def policies(n: int) -> str:
    sections = "\n\n".join(f"## Policy {i}\n\nEmployee{i} works at Company{i}." for i in range(n))
    return f"# Policies\n\n{sections}"


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(Behaviour(latency_ms=40, jitter_ms=10, seed=3)) as fake:
        yield fake


def _runtime(tmp_path: Path, fake_model: FakeOpenAIServer, concurrency: int, **env: str) -> Runtime:
    settings = load_settings(env={
        "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": TEST_SECRET,
        "OPENAI_BASE_URL": fake_model.url, "AGENT_MEMORY_MODELS_EXTRACTION": "openai/fake-extract",
        "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat", "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1",
        "AGENT_MEMORY_LIMITS_DOCUMENT_CONCURRENCY": str(concurrency),
        # one call per chunk: these tests count and gate calls chunk by chunk (windows of
        # several chunks per call: tests/documents/test_document_windows.py)
        "AGENT_MEMORY_LIMITS_DOCUMENT_WINDOW_CHARS": "0", **env})
    rt = Runtime(settings)
    set_runtime(rt)
    return rt


@pytest.fixture
def fake_runtime(tmp_path: Path, fake_model: FakeOpenAIServer) -> Iterator[Runtime]:
    rt = _runtime(tmp_path, fake_model, concurrency=4)
    yield rt
    rt.close()
    set_runtime(None)


def rows(rt: Runtime, pk: str) -> list[Record]:
    return rt.store.query(pk, limit=1000).records


def chunk_hits(rt: Runtime, query: str) -> list:
    return fused_search(rt.search, query, SearchFilter(context_id="acme", kinds=["chunk"]), k=50)


class Gate:
    """Wraps ``facts.extract``: the first ``open_for`` calls pass, the rest wait for ``release``."""

    def __init__(self, rt: Runtime, open_for: int):
        self.inner = rt.facts.extract
        self.open_for = open_for
        self.calls = 0
        self.lock = threading.Lock()
        self.released = threading.Event()

    def __call__(self, ctx, text, observed, speaker=None):
        with self.lock:
            self.calls += 1
            mine = self.calls
        if mine > self.open_for:
            assert self.released.wait(timeout=30)
        return self.inner(ctx, text, observed)


def wait_for(predicate, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_upload_answers_202_at_once_and_extracts_in_parallel_up_to_the_setting(fake_runtime, fake_model):
    api = InProcessApi()
    r = api.post(DOCS, {"title": "Policies", "text": policies(24)})
    assert r.status == 202, r.text
    body = r.json()
    assert body["status"] == "ingesting" and body["chunksTotal"] == 24
    fake_runtime.ingestion_queue.join(timeout=60)
    doc = api.get(f"{DOCS}/{body['id']}").json()
    assert doc["status"] == "ready" and doc["chunksDone"] == doc["chunksTotal"] == 24
    assert fake_model.stats.by_path[CHAT] == 24  # one extraction call per chunk, over HTTP
    # The fake model saw several calls at once, never more than the setting (4 here).
    assert 2 <= fake_model.stats.max_in_flight[CHAT] <= 4
    assert all(rows(fake_runtime, pk) == [] for pk in keys.document_parts_pks(RC, body["id"]))  # the sources are gone once ready
    assert len(rows(fake_runtime, keys.chunks_pk(RC, body["id"]))) == 24
    assert any(r.data.get("value") == "Company7" for r in rows(fake_runtime, keys.attrs_pk(RC, "entity:person/employee7")))


def test_chunks_are_searchable_and_progress_shows_as_they_commit(fake_runtime, monkeypatch):
    gate = Gate(fake_runtime, open_for=3)
    monkeypatch.setattr(fake_runtime.facts, "extract", gate)
    api = InProcessApi()
    doc_id = api.post(DOCS, {"text": policies(9)}).json()["id"]
    wait_for(lambda: api.get(f"{DOCS}/{doc_id}").json()["chunksDone"] == 3)
    doc = api.get(f"{DOCS}/{doc_id}").json()
    assert doc["status"] == "ingesting" and doc["chunksTotal"] == 9
    assert len(api.get(f"{DOCS}/{doc_id}/chunks").json()["chunks"]) == 3
    assert chunk_hits(fake_runtime, "Policies")  # committed chunks are searchable already
    gate.released.set()
    fake_runtime.ingestion_queue.join(timeout=60)
    assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready"


def test_a_redelivered_job_continues_where_it_stopped_and_repeats_nothing(fake_runtime, fake_model, monkeypatch):
    sent: list[IngestionJob] = []
    monkeypatch.setattr(fake_runtime.ingestion_queue, "send", sent.append)  # deliver by hand
    upload = fake_runtime.documents.ingest(RC, DocumentUpload(text=policies(11)))
    assert upload.created and len(sent) == 1
    job = sent[0]
    ingestion = fake_runtime.ingestion
    commits = []
    commit = ingestion._commit
    monkeypatch.setattr(ingestion, "_commit", lambda *a: commits.append(1) or commit(*a))
    with pytest.raises(IngestionInterrupted):  # out of time after 5 commits: the message is redelivered
        ingestion.process(job, should_stop=lambda: len(commits) >= 5)
    doc_id = upload.document.id
    first_chunks = {r.sk: r.data["id"] for r in rows(fake_runtime, keys.chunks_pk(RC, doc_id))}
    first_calls = fake_model.stats.by_path[CHAT]
    assert 5 <= len(first_chunks) < 11
    assert fake_runtime.store.get(keys.documents_pk(RC), doc_id).data["chunksDone"] == len(first_chunks)

    assert ingestion.process(job) == "ready"
    # Only the chunks not committed before were extracted again; the committed ones kept their ids.
    assert fake_model.stats.by_path[CHAT] - first_calls == 11 - len(first_chunks)
    chunks = {r.sk: r.data["id"] for r in rows(fake_runtime, keys.chunks_pk(RC, doc_id))}
    assert len(chunks) == 11 and all(chunks[sk] == cid for sk, cid in first_chunks.items())
    attrs = [r for r in rows(fake_runtime, keys.attrs_pk(RC, "entity:person/employee0"))
             if r.data.get("kind") == "attribute"]
    assert len(attrs) == 1  # one fact, stored once

    calls = fake_model.stats.by_path[CHAT]
    assert ingestion.process(job) == "ready"  # a duplicate delivery after the end does nothing
    assert fake_model.stats.by_path[CHAT] == calls
    assert len(rows(fake_runtime, keys.chunks_pk(RC, doc_id))) == 11


def test_deleting_while_ingesting_stops_the_work_and_leaves_nothing(fake_runtime, fake_model, monkeypatch):
    gate = Gate(fake_runtime, open_for=2)
    monkeypatch.setattr(fake_runtime.facts, "extract", gate)
    api = InProcessApi()
    doc_id = api.post(DOCS, {"text": policies(30)}).json()["id"]
    wait_for(lambda: api.get(f"{DOCS}/{doc_id}").json()["chunksDone"] == 2)
    assert api.delete(f"{DOCS}/{doc_id}").status == 204
    assert api.get(f"{DOCS}/{doc_id}").status == 404
    gate.released.set()
    fake_runtime.ingestion_queue.join(timeout=60)
    assert gate.calls < 30  # the worker stopped; it did not extract the rest
    for pk in (keys.documents_pk(RC), keys.document_hashes_pk(RC), keys.chunks_pk(RC, doc_id),
               *keys.document_parts_pks(RC, doc_id)):
        assert rows(fake_runtime, pk) == [], pk
    assert chunk_hits(fake_runtime, "Policies Employee works Company") == []
    again = api.post(DOCS, {"text": policies(30)})
    assert again.status == 202 and again.json()["id"] != doc_id  # the content can come back


def test_a_failing_model_ends_failed_with_a_problem_document(fake_runtime, fake_model):
    fake_model.behaviour.failure_rate = 1.0
    api = InProcessApi()
    doc_id = api.post(DOCS, {"text": policies(3)}).json()["id"]
    fake_runtime.ingestion_queue.join(timeout=60)
    doc = api.get(f"{DOCS}/{doc_id}").json()
    assert doc["status"] == "failed" and doc["chunksDone"] == 0
    assert doc["error"]["status"] == 502 and doc["error"]["title"] and doc["error"]["detail"]
    assert all(rows(fake_runtime, pk) == [] for pk in keys.document_parts_pks(RC, doc_id))
    assert api.delete(f"{DOCS}/{doc_id}").status == 204


# --- the SQS worker function --------------------------------------------------------------


def ingestion_handler():
    spec = importlib.util.spec_from_file_location("ingestion_app", REPO / "functions/ingestion/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler


class _Context:
    def __init__(self, remaining_ms: int):
        self.remaining_ms = remaining_ms
        self.function_name = "IngestionFunction"
        self.aws_request_id = "req-1"
        self.invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:IngestionFunction"
        self.memory_limit_in_mb = 1024

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_the_sqs_worker_ingests_and_reports_failed_messages_alone(tmp_path, fake_model, monkeypatch):
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        import boto3

        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="ingestion")["QueueUrl"]
        _runtime(tmp_path, fake_model, concurrency=8, AGENT_MEMORY_INGESTION_QUEUE_URL=url,
                 AWS_REGION="us-east-1")
        try:
            api = InProcessApi()
            doc_id = api.post(DOCS, {"text": policies(5)}).json()["id"]
            messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
            assert [json.loads(m["Body"])["document_id"] for m in messages] == [doc_id]
            assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ingesting"  # nothing runs in-process
            event = {"Records": [{"messageId": m["MessageId"], "body": m["Body"], "eventSource": "aws:sqs"}
                                 for m in messages]
                     + [{"messageId": "broken", "body": "{not json", "eventSource": "aws:sqs"}]}
            result = ingestion_handler()(event, _Context(600_000))
            assert result == {"batchItemFailures": [{"itemIdentifier": "broken"}]}
            assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready"
        finally:
            set_runtime(None)


def test_the_sqs_worker_stops_before_its_time_ends_and_the_redelivery_finishes(tmp_path, fake_model):
    rt = _runtime(tmp_path, fake_model, concurrency=2)
    try:
        sent: list[IngestionJob] = []
        rt.__dict__["ingestion_queue"] = type("Q", (), {"send": staticmethod(sent.append)})()
        doc_id = rt.documents.ingest(RC, DocumentUpload(text=policies(5))).document.id
        event = {"Records": [{"messageId": "m1", "body": json.dumps(sent[0].to_message())}]}
        handler = ingestion_handler()
        # Under a minute left: no model call starts, the message is reported for redelivery.
        assert handler(event, _Context(30_000)) == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
        assert rt.store.get(keys.documents_pk(RC), doc_id).data["status"] == "ingesting"
        assert handler(event, _Context(600_000)) == {"batchItemFailures": []}
        assert rt.store.get(keys.documents_pk(RC), doc_id).data["status"] == "ready"
    finally:
        set_runtime(None)


def test_concurrency_setting_is_a_limit(tmp_path):
    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path), "AGENT_MEMORY_LIMITS_DOCUMENT_CONCURRENCY": "3"})
    assert settings.limits.document_concurrency == 3
    assert replace(settings.limits).document_concurrency == 3
    assert load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path)}).limits.document_concurrency == 8
