"""A streamed chat is observed like a buffered one (docs/deploying.md, "Streaming chat"): the same
chat, on a deployed function with tracing on, once on a host that buffers (the HTTP API: the
frames are joined inside the handler) and once on a host that streams (the local server and our
runtime loop: the frames are made after the handler returned, on another thread), emits the same
EMF metrics (model calls, tokens, model latency, the request), the same spans under the
invocation's subsegment, the same annotations and one request line each; the streamed one also
names its whole duration beside the time its headers took. A plain chat (``stream: false``)
emits the same metric names.

Runs in its own interpreter as tests/deploy/test_tracing.py does (the Tracer patches botocore
for the whole process), segments sent to an in-memory emitter, nothing leaving the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACES = {mode: f"Root=1-5759e988-bd862e3fe1be46a99427{n:04d};Parent=53995c3f42cd8ad9;Sampled=1"
          for n, mode in enumerate(("buffered", "streamed", "plain"))}

SCENARIO = f"""
import contextlib, io, json, os, sys, tempfile, threading
from pathlib import Path

from aws_xray_sdk.core import xray_recorder

sent = []


class MemoryEmitter:
    ip, port = "127.0.0.1", 2000

    def send_entity(self, entity):
        sent.append(json.loads(entity.serialize()))

    def set_daemon_address(self, address):
        pass


xray_recorder.configure(emitter=MemoryEmitter())

from agent_memory import observability
from agent_memory.config import load_settings
from agent_memory.http.gateway import LocalLambdaContext, LocalGateway, build_event
from agent_memory.runtime import Runtime, set_runtime

rt = Runtime(load_settings(env={{"AGENT_MEMORY_DATA_DIR": tempfile.mkdtemp(), "AGENT_MEMORY_CURSOR_SECRET": "s"}}))
set_runtime(rt)
key, _ = rt.api_keys.create("alice")
gateway = LocalGateway(Path({str(REPO)!r}))
headers = {{"authorization": f"Bearer {{key}}", "content-type": "application/json", "user-agent": "sdk-test/1"}}
logs = io.StringIO()
observability.logger.registered_handler.setStream(logs)
out = {{}}
for mode in sys.argv[2:]:
    os.environ["_X_AMZN_TRACE_ID"] = {TRACES!r}[mode]
    path = f"/api/v1/ctx-{{mode}}/chat"
    body = {{"message": "Hello! I live in Oslo. What do you remember?", "stream": mode != "plain"}}
    route, params = gateway.match("POST", path)
    event = build_event(route, "POST", path, "", headers, json.dumps(body).encode(), params, "203.0.113.9")
    context = LocalLambdaContext("chat")
    context.supports_streaming = mode == "streamed"
    emf = io.StringIO()
    with contextlib.redirect_stdout(emf):
        response = gateway.handlers.get(route.handler)(event, context)
        returned = emf.getvalue()  # what was flushed by the time the handler returned
        frames = []
        if "stream" in response:  # written by another thread, as the runtime loop writes it
            writer = threading.Thread(target=lambda: frames.extend(response["stream"]))
            writer.start()
            writer.join()
    out[mode] = {{"status": response["statusCode"], "body": "".join(frames) or response["body"],
                  "flushed_at_return": returned, "emf": [json.loads(x) for x in emf.getvalue().splitlines()
                                                         if '"_aws"' in x]}}
out["logs"] = [json.loads(x) for x in logs.getvalue().splitlines()]
out["segments"] = sent
Path(sys.argv[1]).write_text(json.dumps(out))
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each mode in a fresh interpreter: a second chat in one process would find the first's
    key lookup and query embedding cached, and make fewer calls for that reason alone."""
    tmp = tmp_path_factory.mktemp("streamed-observability")
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "LAMBDA_", "POWERTOOLS_", "_X_AMZN", "AGENT_MEMORY_"))}
    env = {**base, "AGENT_MEMORY_TENANT": "acme", "AWS_LAMBDA_FUNCTION_NAME": "ChatStreamFunction",
           "LAMBDA_TASK_ROOT": "/var/task"}
    result: dict[str, Any] = {"logs": [], "segments": []}
    for mode in TRACES:
        proc = subprocess.run([sys.executable, "-c", SCENARIO, str(tmp / f"{mode}.json"), mode], capture_output=True,
                              text=True, timeout=300, cwd=tmp, env=env)
        assert proc.returncode == 0, proc.stderr[-4000:]
        got = json.loads((tmp / f"{mode}.json").read_text())
        assert got[mode]["status"] == 200, got[mode]
        result[mode] = got[mode]
        result["logs"] += got["logs"]
        result["segments"] += got["segments"]
    return result


def _flatten(entities: list[dict]) -> list[dict]:
    found = []
    for entity in entities:
        found.append(entity)
        found += _flatten(entity.get("subsegments", []))
    return found


def _trace(run: dict[str, Any], mode: str) -> list[dict]:
    root = TRACES[mode].split(";")[0][5:]
    return [e for e in _flatten(run["segments"]) if e.get("trace_id", root) == root and "trace_id" in e]


def _spans_under_handler(run: dict[str, Any], mode: str) -> tuple[dict, Counter]:
    handlers = [e for e in _trace(run, mode) if e["name"] == "## lambda_handler"]
    assert len(handlers) == 1, [e["name"] for e in _trace(run, mode)]
    handler = handlers[0]
    # what the handler's subsegment holds (sent with it, or streamed out before it with it as parent)
    inside = {e["id"] for e in _flatten(handler.get("subsegments", []))}
    parents = {handler["id"]} | inside
    changed = True
    streamed_out = [e for e in _trace(run, mode) if e is not handler]
    while changed:
        changed = False
        for e in streamed_out:
            if e.get("parent_id") in parents and e["id"] not in parents:
                parents.add(e["id"])
                inside.add(e["id"])
                changed = True
    names = Counter(e["name"] for e in _flatten(run["segments"]) if e.get("id") in inside)
    return handler, names


def _metrics(doc: dict) -> dict[str, float]:
    names = [m["Name"] for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    return {n: sum(doc[n]) if isinstance(doc[n], list) else doc[n] for n in names}


def test_the_streamed_chat_emits_the_buffered_chats_metrics_once_its_frames_end(run):
    buffered, streamed = run["buffered"], run["streamed"]
    assert len(buffered["emf"]) == len(streamed["emf"]) == 1
    # the stream's invocation was still open when its handler returned: flushed at the last frame
    assert '"_aws"' in buffered["flushed_at_return"] and '"_aws"' not in streamed["flushed_at_return"]
    b, s = _metrics(buffered["emf"][0]), _metrics(streamed["emf"][0])
    assert set(b) == set(s)
    assert {"Requests", "RequestLatency", "ModelCalls", "ModelLatency", "PromptTokens", "CompletionTokens"} <= set(s)
    for name in ("Requests", "ModelCalls", "PromptTokens", "CompletionTokens", "ServerErrors"):
        assert s[name] == b[name], name
    assert s["PromptTokens"] > 0 and s["CompletionTokens"] > 0
    doc = streamed["emf"][0]
    assert doc["route"] == "POST /api/v1/{context_id}/chat" and doc["status"] == "200"
    # the whole duration as the latency, the headers' time beside it
    assert doc["first_byte_ms"] <= s["RequestLatency"]
    # the same reply either way
    assert buffered["body"].count("event: done") == streamed["body"].count("event: done") == 1


def test_a_plain_chat_emits_the_same_metric_names(run):
    assert set(_metrics(run["plain"]["emf"][0])) == set(_metrics(run["streamed"]["emf"][0]))


def test_the_streamed_chats_spans_are_the_buffered_chats_under_its_invocation(run):
    b_handler, b_spans = _spans_under_handler(run, "buffered")
    s_handler, s_spans = _spans_under_handler(run, "streamed")
    assert s_spans == b_spans
    # the retrieval before the handler returned and the model and writes after it, all inside
    assert {"model.embed", "model.stream", "store.transact"} <= set(s_spans), s_spans
    for handler in (b_handler, s_handler):
        assert handler["annotations"]["route"] == "POST /api/v1/{context_id}/chat"
        assert handler["annotations"]["status"] == 200 and handler["annotations"]["tenant"] == "acme"
    # the streamed invocation's subsegment lasts until its last frame
    assert s_handler["end_time"] >= max(e["end_time"] for e in _trace(run, "streamed") if e["name"] == "model.stream")


def test_each_chat_leaves_one_request_line_with_the_caller_and_the_stream_its_durations(run):
    lines = [x for x in run["logs"] if x["message"] == "request"]
    assert len(lines) == 3
    streamed = [x for x in lines if "first_byte_ms" in x]
    assert len(streamed) == 1 and streamed[0]["first_byte_ms"] <= streamed[0]["duration_ms"]
    assert all(x["user_agent"] == "sdk-test/1" and x["source_ip"] == "203.0.113.9" for x in lines)
    assert all(x["principal"] == "alice" and x["correlation_id"] for x in lines)
