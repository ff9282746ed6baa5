"""The audit log's cost rows (docs/decisions.md, "Audit costs"): each successful request's
model calls and tokens, latency and rows touched, written off the request path (the local
sink's thread; deployed, a log line the audit worker stores), never by the request itself."""

from __future__ import annotations

import base64
import gzip
import importlib.util
import io
import json
import threading
from typing import Any

import pytest

from agent_memory.adapters.audit_sinks import LogAuditSink
from tests.conftest import REPO
from tests.openapi_schemas import assert_matches

CTX = "/api/v1/acme"
READS = [("GET", "/state", None), ("GET", "/profile", None), ("GET", "/entities", None),
         ("GET", "/inspect?ref=entity:person/user", None), ("GET", "/traces", None),
         ("GET", "/traces/stats", None), ("POST", "/query", {"query": "where do I live"}),
         ("POST", "/context", {"query": "where do I live"}), ("GET", "/attributes", None)]


@pytest.fixture
def audit_usage_setting() -> str:
    return "store"


def rows(api: Any, kind: str) -> list[dict[str, Any]]:
    r = api.get(f"{CTX}/audit?kind={kind}&limit=500")
    assert r.status == 200, r.text
    assert_matches("GET", f"{CTX}/audit", r)
    return r.json()["rows"]


def test_each_request_leaves_a_cost_row_with_its_model_calls_tokens_and_rows(api):
    assert api.post(f"{CTX}/facts", {"text": "I live in London."}).status == 200
    reply = api.post(f"{CTX}/chat", {"message": "Where do I live?", "bypassCache": True})
    assert reply.status == 200, reply.text
    assert api.get(f"{CTX}/state").status == 200
    assert api.get(f"{CTX}/state?limit=0").status == 400  # a refused request costs no row
    spent = [r for r in rows(api, "response") if r["action"] == "POST /api/v1/{context_id}/chat"]
    assert len(spent) == 1
    [chat] = spent
    assert chat["modelCalls"] >= 1 and chat["promptTokens"] > 0 and chat["model"]
    assert chat["cost"] == chat["promptTokens"] + chat["completionTokens"]
    assert chat["rowsTouched"] == chat["rowsRead"] + chat["rowsWritten"] and chat["rowsWritten"] > 0
    assert chat["principal"] == "local-admin" and chat["reason"] == "usage" and chat["status"] == 200
    reads = [r for r in rows(api, "retrieval") if r["action"] == "GET /api/v1/{context_id}/state"]
    assert len(reads) == 1 and reads[0]["rowsWritten"] == 0 and reads[0]["rowsRead"] > 0
    assert reads[0]["cost"] == 0.0 and reads[0]["model"] is None and reads[0]["latencyMs"] >= 0
    assert rows(api, "decision") == []  # no bypass, no delegation
    assert all(r["status"] == 200 for r in rows(api, "retrieval") + rows(api, "response"))


def test_a_streamed_reply_is_costed_when_its_frames_end(any_api):
    r = any_api.post(f"{CTX}/chat", {"message": "Where do I live?", "stream": True, "bypassCache": True})
    assert r.status == 200 and "event: done" in r.text, r.text
    [streamed] = [row for row in rows(any_api, "response") if row["action"] == "POST /api/v1/{context_id}/chat"]
    assert streamed["modelCalls"] >= 1 and streamed["model"] and streamed["rowsWritten"] > 0


def test_read_routes_write_nothing_on_the_request_thread(api, runtime, monkeypatch):
    api.post(f"{CTX}/facts", {"text": "I live in London."})
    writes: list[tuple[str, str]] = []
    base = runtime.base_store
    for name in ("put", "delete", "transact"):
        inner = getattr(base, name)

        def spy(*args: Any, _inner: Any = inner, _name: str = name, **kwargs: Any) -> Any:
            writes.append((threading.current_thread().name, _name))
            return _inner(*args, **kwargs)

        monkeypatch.setattr(base, name, spy)
    for method, path, body in READS:
        r = api.request(method, f"{CTX}{path}", body)
        assert r.status == 200, (path, r.text)
    runtime.audit_sink.flush()
    assert [w for w in writes if w[0] != "audit-sink"] == []
    assert writes, "the sink's thread wrote the cost rows"
    costs = rows(api, "retrieval")
    for method, path, _ in READS:
        route = f"{method} /api/v1/{{context_id}}{path.split('?')[0]}"
        assert any(r["action"] == route for r in costs), route


def _audit_handler() -> Any:
    spec = importlib.util.spec_from_file_location("audit_app", REPO / "functions" / "audit" / "app.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module.lambda_handler


def _subscription(lines: list[str]) -> dict[str, Any]:
    payload = {"messageType": "DATA_MESSAGE", "logEvents": [{"id": str(i), "timestamp": 0, "message": m}
                                                            for i, m in enumerate(lines)]}
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


def test_deployed_cost_rows_travel_as_log_lines_that_the_audit_worker_stores(api, runtime, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(runtime.audit, "sink", LogAuditSink(out))
    for method, path, body in READS[:3]:
        assert api.request(method, f"{CTX}{path}", body).status == 200
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["auditRecord"]["data"]["reason"] == "usage" for line in lines)
    forged = json.dumps({"auditRecord": {"pk": "c#acme#default#sessions", "sk": "x", "data": {"kind": "audit"}}})
    decision = json.loads(lines[0])
    decision["auditRecord"]["data"]["reason"] = "admin-bypass"  # decisions never travel this way
    handler = _audit_handler()
    noise = ["START RequestId: 1", '{"level":"INFO","message":"request"}', forged, json.dumps(decision)]
    assert handler(_subscription(lines + noise), None) == {"written": 3, "skipped": 4}
    assert handler(_subscription(lines), None) == {"written": 3, "skipped": 0}  # redelivered: the same rows
    assert handler({"awslogs": {"data": base64.b64encode(gzip.compress(b'{"messageType": "CONTROL_MESSAGE"}'))
                                .decode()}}, None) == {"written": 0, "skipped": 0}
    monkeypatch.setattr(runtime.audit, "sink", None)  # GET /audit itself leaves no row now
    stored = rows(api, "retrieval")
    assert sorted(r["action"] for r in stored) == sorted(f"{m} /api/v1/{{context_id}}{p}" for m, p, _ in READS[:3])
    assert not any(r.pk.endswith("#sessions") and r.sk == "x" for r in runtime.base_store.scan("c#acme#"))
