"""X-Ray tracing of a deployed function (agent_memory/tracing.py): with tracing on, each
invocation is a ``## lambda_handler`` subsegment annotated with the route, status, tenant and
cold start, and each store, search and model call inside it a named, annotated span, with no
response or message text in the trace; with tracing off (locally, in tests, under
``POWERTOOLS_TRACE_DISABLED``) nothing imports ``aws_xray_sdk`` and no adapter is wrapped.

The traced runs are separate interpreters: the Tracer patches botocore for the whole process,
which the other tests in a worker must not inherit. Segments go to an in-memory emitter in
place of the UDP one (the X-Ray SDK's ``emitter`` setting), so nothing leaves the machine."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_memory import tracing
from agent_memory.ports import BatchWritableIndex

REPO = Path(__file__).resolve().parents[2]
SECRET_TEXT = "my locker code is 4471"
TRACE_1 = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad9;Sampled=1"
TRACE_2 = "Root=1-5759e988-bd862e3fe1be46a994272794;Parent=53995c3f42cd8ad9;Sampled=1"

# Runs POST /facts then POST /query through the functions' handlers (LocalGateway, in
# process) on a SQLite store with the embedded index and the offline model, and writes what
# was emitted and what was imported to the file named by argv[1].
SCENARIO = f"""
import json, os, sys, tempfile
from pathlib import Path

sent = []
if os.environ.get("CAPTURE_SEGMENTS"):
    from aws_xray_sdk.core import xray_recorder

    class MemoryEmitter:
        ip, port = "127.0.0.1", 2000

        def send_entity(self, entity):
            sent.append(json.loads(entity.serialize()))

        def set_daemon_address(self, address):
            pass

    xray_recorder.configure(emitter=MemoryEmitter())

if os.environ.get("BREAK_XRAY"):  # a layer without the X-Ray SDK: importing it fails
    sys.modules["aws_xray_sdk"] = sys.modules["aws_xray_sdk.core"] = None

from agent_memory import tracing
from agent_memory.config import load_settings
from agent_memory.http.local_server import LocalGateway
from agent_memory.runtime import Runtime, set_runtime

# inline: the adapters run inside the traced invocation, as on Lambda (the projector function)
rt = Runtime(load_settings(env={{"AGENT_MEMORY_DATA_DIR": tempfile.mkdtemp(), "AGENT_MEMORY_CURSOR_SECRET": "s",
                                "AGENT_MEMORY_PROJECTION": "inline"}}))
set_runtime(rt)
key, _ = rt.api_keys.create("alice")
gateway = LocalGateway(Path({str(REPO)!r}))
headers = {{"authorization": f"Bearer {{key}}", "content-type": "application/json"}}
statuses = []
os.environ["_X_AMZN_TRACE_ID"] = {TRACE_1!r}
statuses.append(gateway.invoke("POST", "/api/v1/acme/facts", headers,
                               json.dumps({{"text": "I live in Oslo and {SECRET_TEXT}."}}).encode())["statusCode"])
os.environ["_X_AMZN_TRACE_ID"] = {TRACE_2!r}
statuses.append(gateway.invoke("POST", "/api/v1/acme/query", headers,
                               json.dumps({{"query": "where do I live?"}}).encode())["statusCode"])
Path(sys.argv[1]).write_text(json.dumps({{
    "statuses": statuses, "segments": sent,
    "xray_imported": sys.modules.get("aws_xray_sdk") is not None, "tracer_built": tracing._tracer is not None,
    "store": type(rt.base_store).__name__, "search": type(rt.search).__name__,
}}))
"""


def run_scenario(tmp_path: Path, **env: str) -> dict[str, Any]:
    out = tmp_path / "scenario.json"
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "LAMBDA_", "POWERTOOLS_", "_X_AMZN", "AGENT_MEMORY_"))}
    proc = subprocess.run([sys.executable, "-c", SCENARIO, str(out)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**base, "AGENT_MEMORY_TENANT": "acme", **env})
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["statuses"] == [200, 200], result
    return result


LAMBDA = {"AWS_LAMBDA_FUNCTION_NAME": "FactsFunction", "LAMBDA_TASK_ROOT": "/var/task"}


def flatten(entities: list[dict]) -> list[dict]:
    found = []
    for entity in entities:
        found.append(entity)
        found += flatten(entity.get("subsegments", []))
    return found


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_scenario(tmp_path_factory.mktemp("traced"), CAPTURE_SEGMENTS="1", **LAMBDA)


def test_each_invocation_is_a_handler_subsegment_with_route_status_tenant_and_cold_start(traced_run):
    handlers = [s for s in flatten(traced_run["segments"]) if s["name"] == "## lambda_handler"]
    assert [h["trace_id"] for h in handlers] == [TRACE_1.split(";")[0][5:], TRACE_2.split(";")[0][5:]]
    first, second = (h["annotations"] for h in handlers)
    assert first == {"route": "POST /api/v1/{context_id}/facts", "status": 200, "tenant": "acme",
                     "ColdStart": True, "Service": "agent-memory"}
    assert second["route"] == "POST /api/v1/{context_id}/query" and second["ColdStart"] is False
    assert all(h["parent_id"] == "53995c3f42cd8ad9" for h in handlers)  # under Lambda's own segment


def test_store_search_and_model_calls_are_named_annotated_spans(traced_run):
    spans = [s for s in flatten(traced_run["segments"]) if s["name"] != "## lambda_handler"]
    names = {s["name"] for s in spans}
    assert {"store.put", "store.query", "store.get", "model.structured", "model.embed",
            "search.upsert", "search.rank_rows"} <= names, names
    for s in spans:
        kind = s["name"].split(".")[0]
        assert kind in {"store", "search", "model"}, s["name"]
        expected = {"store": {"store": "sqlite"}, "search": {"search": "embedded"},
                    "model": {"model": "hashing/v1" if s["name"] == "model.embed" else "offline/deterministic"}}
        assert s["annotations"] == expected[kind], s
        assert s["end_time"] >= s["start_time"]
    # spans nest: the index embeds the units it writes inside its search.upsert span
    entities = flatten(traced_run["segments"])
    parent = {e["id"]: e.get("parent_id") for e in entities}
    parent.update({child["id"]: e["id"] for e in entities for child in e.get("subsegments", [])})
    names_by_id = {e["id"]: e["name"] for e in entities}
    assert "search.upsert" in {names_by_id.get(parent[s["id"]]) for s in spans if s["name"] == "model.embed"}


def test_no_response_or_message_text_is_traced(traced_run):
    text = json.dumps(traced_run["segments"])
    assert SECRET_TEXT not in text and "Oslo" not in text
    assert not [s for s in flatten(traced_run["segments"]) if s.get("metadata")]  # no captured responses


def test_a_traced_function_wraps_its_adapters(traced_run):
    assert traced_run["tracer_built"]
    assert traced_run["store"] == traced_run["search"] == "Traced"


@pytest.mark.parametrize("env", [{}, {"AWS_LAMBDA_FUNCTION_NAME": "FactsFunction"},
                                 {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "true"},
                                 {**LAMBDA, "AWS_SAM_LOCAL": "true"}],
                         ids=["local", "lambda-harness", "trace-disabled", "sam-local"])
def test_untraced_nothing_imports_the_xray_sdk_and_no_adapter_is_wrapped(tmp_path, env):
    result = run_scenario(tmp_path, **env)
    assert result["xray_imported"] is False and result["tracer_built"] is False
    assert (result["store"], result["search"]) == ("SQLiteRecordStore", "EmbeddedSearchIndex")


def test_a_function_that_cannot_build_the_tracer_serves_untraced(tmp_path):
    result = run_scenario(tmp_path, BREAK_XRAY="1", **LAMBDA)  # both requests answered 200
    assert result["tracer_built"] is False
    # adapters built after the failure are not wrapped (the store was built before the first
    # request, by the scenario's key creation: its spans are no-ops, never a failure)
    assert result["search"] == "EmbeddedSearchIndex"


def test_the_enabled_switch_follows_powertools(monkeypatch):
    for name in ("POWERTOOLS_TRACE_DISABLED", "AWS_SAM_LOCAL", "LAMBDA_TASK_ROOT", "AWS_LAMBDA_FUNCTION_NAME"):
        monkeypatch.delenv(name, raising=False)
    assert not tracing.enabled()
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "f")
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    assert tracing.enabled()
    for off in ("1", "true", "Yes", "on"):
        monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", off)
        assert not tracing.enabled(), off
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "false")
    assert tracing.enabled()


# --- the seam, in process, against a recording provider ------------------------------


class RecordingProvider:
    def __init__(self, fail: bool = False):
        self.spans: list[dict[str, Any]] = []
        self.fail = fail

    @contextlib.contextmanager
    def in_subsegment(self, name: str):
        if self.fail:
            raise RuntimeError("the tracer broke")
        record: dict[str, Any] = {"name": name, "annotations": {}, "error": None}

        class Subsegment:
            def put_annotation(self, key, value):
                record["annotations"][key] = value

        try:
            yield Subsegment()
        except Exception as exc:
            record["error"] = type(exc).__name__
            raise
        finally:
            self.spans.append(record)


class FakeIndex:
    size = 3

    def search(self, query, flt, *, k=10, mode="bm25"):
        return [query, k]

    def write(self, upserts, deletes):
        raise TimeoutError("index down")

    def helper(self):
        return "untraced"


@pytest.fixture
def provider(monkeypatch):
    recording = RecordingProvider()
    monkeypatch.setattr(tracing, "_tracer", type("T", (), {"provider": recording})())
    monkeypatch.setattr(tracing, "_active", True)
    return recording


def test_traced_calls_are_spans_and_everything_else_passes_through(provider):
    index = tracing.Traced(FakeIndex(), "search", frozenset({"search", "write"}), search="opensearch")
    assert index.search("q", None, k=4) == ["q", 4]
    assert index.helper() == "untraced" and index.size == 3
    assert isinstance(index, BatchWritableIndex)
    with pytest.raises(TimeoutError):
        index.write([], {})
    assert provider.spans == [
        {"name": "search.search", "annotations": {"search": "opensearch"}, "error": None},
        {"name": "search.write", "annotations": {"search": "opensearch"}, "error": "TimeoutError"},
    ]


def test_a_broken_tracer_never_fails_the_call(monkeypatch):
    monkeypatch.setattr(tracing, "_tracer", type("T", (), {"provider": RecordingProvider(fail=True)})())
    monkeypatch.setattr(tracing, "_active", True)
    index = tracing.Traced(FakeIndex(), "search", frozenset({"search"}))
    assert index.search("q", None) == ["q", 10]


def test_outside_a_traced_invocation_a_span_is_a_shared_no_op(monkeypatch):
    monkeypatch.setattr(tracing, "_active", False)
    assert tracing.span("store.get") is tracing.span("search.search")
    monkeypatch.setattr(tracing, "_tracer", None)
    tracing.annotate(route="x")  # builds no tracer
    assert tracing._tracer is None


def test_services_never_import_the_tracer_or_the_sdks():
    """Spans are wired around the ports in runtime; a use case never sees a tracer
    (.importlinter has the agent_memory side; this checks the third-party one)."""
    import ast

    bad = []
    for path in sorted((REPO / "shared" / "agent_memory" / "services").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.name}: {n}" for n in names
                    if n.split(".")[0] in {"aws_xray_sdk", "aws_lambda_powertools"} or n == "agent_memory.tracing"]
    assert bad == []
