"""Large documents: the synchronous body cap (413 naming the upload route) and the presigned
S3 upload (``POST /documents/uploads``, PUT, ``POST /documents/{id}/complete``) the ingestion
worker reads, under moto's S3: in-process for the service, and ``ThreadedMotoServer`` for a
real HTTP PUT to the presigned URL (in-process moto does not intercept httpx)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import boto3
import pytest
from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.ports import SearchFilter
from agent_memory.runtime import Runtime, get_runtime, set_runtime
from tests.conftest import InProcessApi, make_settings, serialise_moto

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
RC = RequestContext(context_id="acme", principal="local-admin", admin=True)
BUCKET = "agent-memory-uploads-test"
TEXT = "# Travel policy\n\nBook trains, not flights.\n\n## Expenses\n\nSubmit receipts within 30 days.\n"


def settle() -> None:
    get_runtime().ingestion_queue.join(timeout=60)


@pytest.fixture
def s3_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    from moto import mock_aws

    serialise_moto(monkeypatch)
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        rt = Runtime(replace(make_settings(tmp_path), upload_bucket=BUCKET))
        set_runtime(rt)
        yield rt
        rt.close()
    set_runtime(None)


@pytest.fixture
def api(s3_runtime: Runtime) -> InProcessApi:
    return InProcessApi()


def put(doc_id: str, body: bytes) -> None:
    """The caller's PUT to the presigned URL (in-process moto: through boto3)."""
    boto3.client("s3", region_name="us-east-1").put_object(Bucket=BUCKET, Key=f"staging/{doc_id}", Body=body)


def ticket(api: InProcessApi, size: int, **extra) -> dict:
    r = api.post(f"{DOCS}/uploads", {"size": size, **extra})
    assert r.status == 201, r.text
    return r.json()


def test_a_presigned_upload_is_ingested_by_the_worker_and_the_object_removed(api):
    body = TEXT.encode()
    t = ticket(api, len(body), labels=["policy"])
    assert t["status"] == "uploading" and t["method"] == "PUT"
    assert t["headers"] == {"Content-Type": "text/plain", "Content-Length": str(len(body))}
    assert BUCKET in t["uploadUrl"] and f"staging/{t['id']}" in t["uploadUrl"]
    assert "X-Amz-Signature" in t["uploadUrl"] and "content-length" in t["uploadUrl"].lower()
    assert api.get(f"{DOCS}/{t['id']}").json()["status"] == "uploading"
    put(t["id"], body)
    r = api.post(f"{DOCS}/{t['id']}/complete")
    assert r.status == 202, r.text
    settle()
    doc = api.get(f"{DOCS}/{t['id']}").json()
    assert doc["status"] == "ready" and doc["chunksDone"] == doc["chunksTotal"] >= 1
    assert doc["title"] == "Travel policy" and doc["format"] == "markdown" and doc["labels"] == ["policy"]
    again = api.post(f"{DOCS}/{t['id']}/complete")  # a repeat queues nothing
    assert again.status == 200 and again.json()["status"] == "ready"
    s3 = boto3.client("s3", region_name="us-east-1")
    listed = s3.list_objects_v2(Bucket=BUCKET)
    # the staged upload is gone; the original is kept, encrypted at rest, until the document is deleted
    assert [o["Key"] for o in listed.get("Contents", [])] == [f"originals/{t['id']}"]
    assert s3.head_object(Bucket=BUCKET, Key=f"originals/{t['id']}")["ServerSideEncryption"] == "AES256"
    raw = api.get(f"{DOCS}/{t['id']}/raw")
    assert raw.status == 200 and raw.body == body and raw.headers["content-type"].startswith("text/plain")
    hits = fused_search(get_runtime().search, "trains", SearchFilter(context_id="acme", kinds=["chunk"], admin=True))
    assert any("trains" in h.unit.text for h in hits)
    assert api.delete(f"{DOCS}/{t['id']}").status == 204
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0, "delete leaves the original behind"


def test_complete_without_an_upload_fails_the_document_with_a_problem(api):
    t = ticket(api, 10)
    assert api.post(f"{DOCS}/{t['id']}/complete").status == 202
    settle()
    doc = api.get(f"{DOCS}/{t['id']}").json()
    assert doc["status"] == "failed" and doc["error"]["code"] == "upload_missing"
    assert not any(get_runtime().store.query(pk, limit=10).records for pk in keys.document_parts_pks(RC, t["id"]))


def test_uploading_content_already_stored_fails_naming_the_document(api):
    first = api.post(DOCS, {"text": TEXT})
    assert first.status == 202
    settle()
    t = ticket(api, len(TEXT.encode()))
    put(t["id"], TEXT.encode())
    api.post(f"{DOCS}/{t['id']}/complete")
    settle()
    doc = api.get(f"{DOCS}/{t['id']}").json()
    assert doc["status"] == "failed" and doc["error"]["status"] == 409
    assert doc["error"]["code"] == "duplicate_document" and first.json()["id"] in doc["error"]["detail"]
    assert api.delete(f"{DOCS}/{t['id']}").status == 204
    assert api.get(f"{DOCS}/{first.json()['id']}").json()["status"] == "ready"  # the original is untouched


def test_a_redelivered_upload_job_ingests_once(api, s3_runtime: Runtime):
    from agent_memory.services.documents.ingestion import IngestionJob

    t = ticket(api, len(TEXT.encode()))
    put(t["id"], TEXT.encode())
    job = IngestionJob.for_document(RC, t["id"])
    assert s3_runtime.ingestion.process(job) == "ready"
    assert s3_runtime.ingestion.process(job) == "ready"  # SQS delivered it twice
    chunks = s3_runtime.store.query(keys.chunks_pk(RC, t["id"]), limit=100).records
    assert len(chunks) == api.get(f"{DOCS}/{t['id']}").json()["chunksTotal"]


def test_deleting_an_uploading_document_leaves_nothing(api, s3_runtime: Runtime):
    from agent_memory.services.documents.ingestion import IngestionJob

    t = ticket(api, len(TEXT.encode()))
    put(t["id"], TEXT.encode())
    assert api.delete(f"{DOCS}/{t['id']}").status == 204
    assert s3_runtime.ingestion.process(IngestionJob.for_document(RC, t["id"])) == "gone"
    assert api.get(f"{DOCS}/{t['id']}").status == 404
    assert api.post(f"{DOCS}/{t['id']}/complete").status == 404


def test_a_declared_size_over_the_document_cap_is_413(api):
    r = api.post(f"{DOCS}/uploads", {"size": 5 * 1024 * 1024 + 1})
    assert r.status == 413 and r.headers["content-type"] == "application/problem+json"
    assert api.post(f"{DOCS}/uploads", {"size": 0}).status == 400


def test_a_synchronous_body_over_the_lambda_safe_cap_is_413_naming_the_upload_route(api):
    cap = get_runtime().settings.limits.sync_body_bytes
    assert cap * 2 < 6_291_456 and cap * 4 / 3 < 6_291_456  # escaped or base64-encoded, under Lambda's limit
    r = api.post(DOCS, {"text": "a" * cap})
    assert r.status == 413, r.text
    problem = r.json()
    assert problem["code"] == "use_presigned_upload" and problem["uploadRoute"] == f"{DOCS}/uploads"
    assert not get_runtime().store.query(keys.documents_pk(RC), limit=10).records


def test_without_an_upload_bucket_uploads_go_to_the_local_store_on_the_same_server(runtime):
    api = InProcessApi()
    body = TEXT.encode()
    t = ticket(api, len(body), filename="travel.md")
    assert t["uploadUrl"].startswith("http://localhost/_local/uploads/staging/"), t["uploadUrl"]
    assert t["headers"] == {"Content-Type": "text/markdown", "Content-Length": str(len(body))}
    path = t["uploadUrl"].removeprefix("http://localhost")
    gateway = api.gateway
    put_ = lambda target, data, ctype="text/markdown": gateway.invoke("PUT", target, {"content-type": ctype}, data)  # noqa: E731
    assert put_(path, body[:-1])["statusCode"] == 400  # another size than signed
    assert put_(path, body, "text/plain")["statusCode"] == 400  # another type than signed
    assert put_(path.replace("signature=", "signature=0"), body)["statusCode"] == 403
    assert put_(path.replace("staging/doc_", "staging/doc_x"), body)["statusCode"] == 403  # signed for another key
    assert gateway.invoke("GET", path, {}, b"")["statusCode"] == 405
    assert api.get(f"{DOCS}/{t['id']}").json()["status"] == "uploading"
    assert put_(path, body)["statusCode"] == 200
    assert api.post(f"{DOCS}/{t['id']}/complete").status == 202
    settle()
    doc = api.get(f"{DOCS}/{t['id']}").json()
    assert doc["status"] == "ready" and doc["format"] == "markdown" and doc["title"] == "Travel policy"
    assert api.get(f"{DOCS}/{t['id']}/raw").body == body
    uploads = runtime.settings.data_dir / "uploads"
    assert not (uploads / "staging" / t["id"]).exists() and (uploads / "originals" / t["id"]).exists()
    assert api.delete(f"{DOCS}/{t['id']}").status == 204
    assert not (uploads / "originals" / t["id"]).exists()


def test_an_expired_local_upload_url_is_refused(runtime, monkeypatch):
    import time as time_module

    api = InProcessApi()
    t = ticket(api, 4)
    path = t["uploadUrl"].removeprefix("http://localhost")
    later = time_module.time() + runtime.settings.limits.upload_url_ttl_s + 1
    monkeypatch.setattr("agent_memory.adapters.upload_store.time.time", lambda: later)
    answer = api.gateway.invoke("PUT", path, {"content-type": "text/plain"}, b"abcd")
    assert answer["statusCode"] == 403 and "expired" in answer["body"]


# --- over HTTP: the SDK, the local server and a presigned PUT to moto_server -----------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def moto_http(monkeypatch) -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = _free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    moto.start()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        yield f"http://127.0.0.1:{port}"
    finally:
        moto.stop()


def test_the_async_sdk_uploads_through_a_presigned_url_too(tmp_path: Path, moto_http: str):
    import asyncio

    from agent_memory.client import AsyncAgentMemory
    from agent_memory.http.local_server import make_server

    rt = Runtime(replace(make_settings(tmp_path), upload_bucket=BUCKET))
    set_runtime(rt)
    server = make_server("127.0.0.1", 0, Path(__file__).resolve().parents[2])
    threading.Thread(target=server.serve_forever, daemon=True).start()

    async def main():
        async with AsyncAgentMemory("acme", f"http://127.0.0.1:{server.server_port}") as mem:
            doc = await mem.documents.upload_large(TEXT.encode(), "Travel")
            rt.ingestion_queue.join(timeout=60)
            return await mem.documents.wait_ready(doc.id, timeout=30)

    try:
        done = asyncio.run(main())
        assert done.status == "ready" and done.title == "Travel" and done.chunks_done == done.chunks_total
    finally:
        server.shutdown()
        server.server_close()
        rt.close()
        set_runtime(None)


def test_the_sdk_uploads_a_large_document_over_http_to_a_presigned_url(tmp_path: Path, monkeypatch):
    from moto.server import ThreadedMotoServer

    from agent_memory.client import AgentMemory
    from agent_memory.http.local_server import make_server

    port = _free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    moto.start()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        rt = Runtime(replace(make_settings(tmp_path), upload_bucket=BUCKET))
        set_runtime(rt)
        server = make_server("127.0.0.1", 0, Path(__file__).resolve().parents[2])
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            big = "\n\n".join(f"## Section {i}\n\n" + f"Policy line {i}. " * 200 for i in range(900))
            body = ("# Big policy\n\n" + big).encode()
            assert len(body) > rt.settings.limits.sync_body_bytes
            with AgentMemory("acme", f"http://127.0.0.1:{server.server_port}") as mem:
                doc = mem.documents.upload_large(body, filename="policy.md")
                assert doc.status in ("uploading", "ingesting", "ready")
                rt.ingestion_queue.join(timeout=120)
                done = mem.documents.wait_ready(doc.id, timeout=60)
            assert done.status == "ready" and done.chunks_done == done.chunks_total > 100
            assert 0.99 * len(body) < done.size <= len(body) and done.format == "markdown"  # normalised text
        finally:
            server.shutdown()
            server.server_close()
            rt.close()
            set_runtime(None)
    finally:
        moto.stop()


@pytest.mark.parametrize("title", ["   ", "a\x00b", "bad \ud800 title"])
def test_an_upload_ticket_checks_its_title_as_an_upload_does(api, title):
    """Blank, NUL or a lone surrogate: 400 naming ``title``, and no document row written."""
    escaped = json.dumps(title)  # "\u0000", "\ud800": JSON escapes a client may send
    r = api.post(f"{DOCS}/uploads", raw=b'{"size": 10, "title": %s}' % escaped.encode())
    assert r.status == 400, r.text
    assert r.json()["field"] == "title", r.text
    assert not get_runtime().store.query(keys.documents_pk(RC), limit=10).records


def test_a_deployed_function_without_an_upload_bucket_says_so_with_501_not_load(tmp_path, monkeypatch):
    """No bucket on a deployed function: the upload cannot be taken there at all. That is a
    missing capability, not load: 501 naming it, no Retry-After (clients retry a 503), nothing
    stored; the synchronous route still takes a document under its cap."""
    rt = Runtime(make_settings(tmp_path))
    set_runtime(rt)
    try:
        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agent-memory-documents")
        assert rt.upload_store is None  # what Runtime builds on a function without a bucket
        monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")  # (the local gateway then needs no API key)
        api = InProcessApi()
        r = api.post(f"{DOCS}/uploads", {"size": 10, "filename": "notes.md"})
        assert r.status == 501 and r.headers["content-type"] == "application/problem+json", r.text
        assert r.json()["code"] == "uploads_unavailable" and "retry-after" not in r.headers
        assert "POST /documents" in r.json()["detail"]
        assert not rt.store.query(keys.documents_pk(RC), limit=10).records
        r = api.post(DOCS, {"text": TEXT})
        assert r.status == 202 and api.get(f"{DOCS}/{r.json()['id']}/raw").status == 404  # no original kept
    finally:
        rt.close()
        set_runtime(None)


@pytest.mark.over_http
def test_the_async_sdk_uploads_through_the_local_servers_own_upload_store(server, runtime):
    """No bucket, no AWS: the ticket's URL is the local server's, and the async SDK's PUT lands
    in the local upload store."""
    import asyncio

    from agent_memory.client import AsyncAgentMemory

    async def main():
        async with AsyncAgentMemory("acme", server) as mem:
            doc = await mem.documents.upload_large(TEXT.encode(), "Travel", filename="travel.md")
            runtime.ingestion_queue.join(timeout=60)
            return await mem.documents.wait_ready(doc.id, timeout=30), await mem.documents.fetch_raw(doc.id)

    done, raw = asyncio.run(main())
    assert done.status == "ready" and done.title == "Travel" and done.format == "markdown" and raw == TEXT.encode()
    assert (runtime.settings.data_dir / "uploads" / "originals" / done.id).read_bytes() == TEXT.encode()
