"""Log and metric shapes of a deployed function: one JSON log line per request with the
correlation id, context id and principal; one EMF document per invocation with the request
by route and status and the model calls; no key, secret or message text in either."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agent_memory import observability
from agent_memory.config import load_settings
from agent_memory.http.local_server import LocalGateway
from agent_memory.runtime import Runtime, set_runtime

REPO = Path(__file__).resolve().parents[2]
SECRET_TEXT = "my locker code is 4471"


@pytest.fixture
def lambda_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "FactsFunction")
    monkeypatch.setenv("AGENT_MEMORY_TENANT", "acme")
    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": "s"})
    rt = Runtime(settings)
    set_runtime(rt)
    logs = io.StringIO()
    handler = observability.logger.registered_handler
    previous = handler.setStream(logs)
    yield rt, logs
    handler.setStream(previous)
    set_runtime(None)


def invoke(method: str, path: str, key: str, body: dict) -> dict:
    return LocalGateway(REPO).invoke(method, path, {"authorization": f"Bearer {key}",
                                                    "content-type": "application/json"}, json.dumps(body).encode())


def test_a_request_logs_one_json_line_and_flushes_its_metrics(lambda_runtime, capsys):
    rt, logs = lambda_runtime
    key, _ = rt.api_keys.create("alice")
    resp = invoke("POST", "/api/v1/acme/facts", key, {"text": f"I live in Oslo and {SECRET_TEXT}."})
    assert resp["statusCode"] == 200, resp
    lines = [json.loads(line) for line in logs.getvalue().splitlines()]
    request = [line for line in lines if line["message"] == "request"]
    assert len(request) == 1
    entry = request[0]
    assert entry["level"] == "INFO" and entry["service"] == "agent-memory"
    assert entry["route"] == "POST /api/v1/{context_id}/facts" and entry["status"] == 200
    assert entry["context_id"] == "acme" and entry["principal"] == "alice"
    assert entry["correlation_id"] and entry["function_request_id"]
    everything = logs.getvalue()
    assert key not in everything and SECRET_TEXT not in everything and "Oslo" not in everything

    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert len(emf) == 1
    doc = emf[0]
    directive = doc["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "AgentMemory"
    names = {m["Name"] for m in directive["Metrics"]}
    assert {"Requests", "RequestLatency", "ModelCalls", "ModelLatency"} <= names
    # one series per metric and tenant: route and status are properties, not dimensions
    assert directive["Dimensions"] == [["service", "tenant"]] or \
        sorted(directive["Dimensions"][0]) == ["service", "tenant"], directive["Dimensions"]
    assert doc["tenant"] == "acme" and doc["ServerErrors"] in (0, [0], 0.0, [0.0])
    assert doc["route"] == "POST /api/v1/{context_id}/facts" and doc["status"] == "200"
    assert doc["Requests"] == 1.0 or doc["Requests"] == [1.0]
    assert key not in json.dumps(doc) and SECRET_TEXT not in json.dumps(doc)


def test_an_anonymous_request_is_counted_as_401(lambda_runtime, capsys):
    resp = LocalGateway(REPO).invoke("GET", "/api/v1/acme/entities", {}, b"")
    assert resp["statusCode"] == 401
    doc = next(json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line)
    assert doc["status"] == "401" and doc["route"] == "GET /api/v1/{context_id}/entities"


def test_a_refused_request_is_counted_and_its_line_names_the_caller_without_any_store_call(
        lambda_runtime, capsys, monkeypatch):
    rt, logs = lambda_runtime
    rt.api_keys.create("alice")  # a stored key exists: a made-up one must still not be looked up
    reads: list[str] = []
    for name in ("get", "batch_get", "query"):
        inner = getattr(rt.base_store, name)
        monkeypatch.setattr(rt.base_store, name, lambda *a, _n=name, _f=inner, **k: reads.append(_n) or _f(*a, **k))
    headers = {"user-agent": "flood/1.0", "content-type": "application/json"}
    for extra in ({}, {"authorization": "Bearer am_live_not-a-key-of-this-stack"}, {"authorization": "Basic x"}):
        resp = LocalGateway(REPO).invoke("POST", "/api/v1/acme/chat", {**headers, **extra}, b'{"message": "hi"}')
        assert resp["statusCode"] == 401
    assert reads == []
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert [d["Unauthenticated"] for d in docs] in ([1.0] * 3, [[1.0]] * 3)
    assert "Unauthenticated" in {m["Name"] for m in docs[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    lines = [json.loads(line) for line in logs.getvalue().splitlines()]
    refused = [line for line in lines if line["message"] == "request"]
    assert len(refused) == 3 and all(r["status"] == 401 and r["user_agent"] == "flood/1.0" and r["source_ip"]
                                     for r in refused)
    # a key of the stored form is looked up (once: the miss is cached), then refused too
    made_up = "amk_" + "x" * 43
    resp = LocalGateway(REPO).invoke("POST", "/api/v1/acme/chat", {**headers, "authorization": f"Bearer {made_up}"},
                                     b'{"message": "hi"}')
    assert resp["statusCode"] == 401 and reads == ["get"]


def test_outside_lambda_nothing_is_emitted(tmp_path, capsys):
    rt = Runtime(load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "d"), "AGENT_MEMORY_CURSOR_SECRET": "s"}))
    set_runtime(rt)
    try:
        assert LocalGateway(REPO).invoke("GET", "/api/v1/acme/entities", {}, b"")["statusCode"] == 200
    finally:
        set_runtime(None)
    assert '"_aws"' not in capsys.readouterr().out


def test_a_stream_closed_before_its_first_frame_still_ends_its_request_and_invocation(lambda_runtime, capsys):
    """A caller gone before the headers were written (the runtime loop closes the frames unread):
    the in-flight slot is released, the request's line written and the invocation flushed."""
    rt, logs = lambda_runtime
    key, _ = rt.api_keys.create("alice")
    resp = invoke("POST", "/api/v1/acme/chat", key, {"message": "hello", "stream": True})
    assert resp["statusCode"] == 200 and "stream" in resp
    assert rt.inflight._count == 1 and '"_aws"' not in capsys.readouterr().out  # both held by the frames
    resp["stream"].close()
    assert rt.inflight._count == 0
    assert [json.loads(x)["route"] for x in logs.getvalue().splitlines() if '"request"' in x] == \
        ["POST /api/v1/{context_id}/chat"]
    assert len([x for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]) == 1
    assert observability._in_invocation is False


def test_on_lambda_the_handler_modules_import_is_frozen_out_of_the_collector(monkeypatch):
    import gc

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "FactsFunction")
    made_at_import = [{"row": n} for n in range(100)]
    gc.unfreeze()
    try:
        observability.instrumented(lambda event, context: None)
        assert gc.get_freeze_count() >= len(made_at_import)  # what the import made is no longer scanned
        gc.unfreeze()
        monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
        observability.instrumented(lambda event, context: None)
        assert gc.get_freeze_count() == 0  # the local server and tests: the collector as usual
    finally:
        gc.unfreeze()


def test_on_lambda_the_collector_is_off_while_a_handler_module_imports_and_on_after(tmp_path):
    """agent_memory/__init__.py turns the collector off on Lambda (the import's objects all
    live as long as the container); the handler's decorator turns it back on, and an
    invocation would too. Off Lambda nothing changes. Fresh interpreters: the switch is at import."""
    import os
    import subprocess
    import sys

    code = ("import gc; import agent_memory; off = gc.isenabled(); "
            "from agent_memory import observability; "
            "h = observability.instrumented(lambda e, c: None); print(off, gc.isenabled())")
    shared = str(Path(observability.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    env["PYTHONPATH"] = shared
    lam = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**env, "AWS_LAMBDA_FUNCTION_NAME": "RecallFunction"})
    assert lam.returncode == 0, lam.stderr
    assert lam.stdout.split() == ["False", "True"]
    local = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert local.stdout.split() == ["True", "True"]
