"""Shared fixtures: a runtime per record store (SQLite on disk, DynamoDB under moto with
the table built from template.yaml), with the static API keys a test declares
(``principals_setting``), in-process API Gateway v2 invocation, and the local server on
loopback."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

# The local encoder keeps its rewritten graph in the user's cache folder (adapters/onnx_int8.py):
# tests keep theirs in a folder of their own, never in the home directory.
if "AGENT_MEMORY_TESTS_CACHE" not in os.environ:
    os.environ["AGENT_MEMORY_TESTS_CACHE"] = os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="agent-memory-cache-")

from agent_memory.access.static_principals import parse_principals
from agent_memory.config import Settings, load_settings
from agent_memory.http.local_server import LocalGateway, make_server
from agent_memory.runtime import Runtime, set_runtime

REPO = Path(__file__).resolve().parents[1]
TEST_SECRET = "test-cursor-secret"
FULL_MATRIX_ENV = "AGENT_MEMORY_FULL_MATRIX"


# `make test-moved-clock`: the whole session runs this many days ahead of the real clock, so a
# recorded expectation that holds today's date (or a hash of it) fails there, not next month.
CLOCK_SHIFT_ENV = "AGENT_MEMORY_TEST_CLOCK_SHIFT_DAYS"
# `AGENT_MEMORY_TEST_ORDER=reverse`: every test in the opposite order (files and the tests in
# them), to find tests that pass only after another one ran (docs/testing.md).
ORDER_ENV = "AGENT_MEMORY_TEST_ORDER"
_clock: Any = None


def pytest_configure(config: pytest.Config) -> None:
    """Moves the clock before collection (a module may read it on import); time-machine moves
    every thread's clock, the local server's workers included, and lets it tick."""
    import os

    config.addinivalue_line("markers", "real_clock(reason): cannot run under a moved clock (says why); "
                                       f"skipped when {CLOCK_SHIFT_ENV} is set")
    days = os.environ.get(CLOCK_SHIFT_ENV)
    if days:
        global _clock
        from datetime import UTC, datetime, timedelta

        import time_machine

        _clock = time_machine.travel(datetime.now(UTC) + timedelta(days=int(days)), tick=True)
        _clock.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _clock
    if _clock is not None:
        _clock.stop()
        _clock = None


def pytest_report_header(config: pytest.Config) -> list[str]:
    import os
    from datetime import UTC, datetime

    lines = []
    if _clock is not None:
        lines.append(f"moved clock: {os.environ[CLOCK_SHIFT_ENV]} days ahead, now {datetime.now(UTC):%Y-%m-%d}")
    if os.environ.get(ORDER_ENV):
        lines.append(f"test order: {os.environ[ORDER_ENV]}")
    return lines


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``any_api`` x ``store_kind`` is a cross product whose fourth corner adds nothing: the
    HTTP transport is tested on SQLite, DynamoDB in process (as Lambda calls it), and the
    built-artifact check drives every route over DynamoDB. So the HTTP-over-DynamoDB cases
    (a loopback server in front of moto, the slowest fixture pair; also tests marked
    ``over_http``) are deselected unless ``AGENT_MEMORY_FULL_MATRIX=1``.

    Under a moved clock, tests marked ``real_clock`` skip with their reason; with
    ``AGENT_MEMORY_TEST_ORDER=reverse`` the order is reversed."""
    import os

    if _clock is not None:
        for item in items:
            marker = item.get_closest_marker("real_clock")
            if marker is not None:
                reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
                item.add_marker(pytest.mark.skip(reason=f"needs the real clock: {reason}"))
    order = os.environ.get(ORDER_ENV, "")
    if order == "reverse":
        items.reverse()
    elif order:
        raise pytest.UsageError(f"{ORDER_ENV}={order!r}: the one order offered is 'reverse'")
    if os.environ.get(FULL_MATRIX_ENV) == "1":
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        over_http = params.get("any_api") == "http" or item.get_closest_marker("over_http") is not None
        (drop if over_http and params.get("store_kind") == "dynamodb" else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's keys or config, and none can reach AWS."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_MEMORY_CONFIG", "AGENT_MEMORY_STORE",
                "AGENT_MEMORY_SEARCH", "AGENT_MEMORY_DATA_DIR", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.chdir(tmp_path)


def make_settings(tmp_path: Path, store: str = "sqlite", **overrides: Any) -> Settings:
    env = {"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_STORE": store,
           "AGENT_MEMORY_CURSOR_SECRET": TEST_SECRET, "AWS_REGION": "us-east-1",
           "AGENT_MEMORY_TABLE": "agent-memory-test",
           # Inline projection: a test reads the index right after a write, deterministically.
           # The local default (background, batched, read-your-writes) has its own tests
           # (tests/services/test_background_projection.py, tests/http/test_read_your_writes.py)
           # and is what a test gets that passes ``projection="background"``.
           "AGENT_MEMORY_PROJECTION": "inline"}
    return load_settings(env=env, **overrides)


def serialise_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto applies a request in several unlocked steps (TransactWriteItems copies the table
    and restores the copy when a condition fails), so two threads inside moto can undo each
    other's commits. DynamoDB applies each request atomically; one request at a time inside
    moto restores that, while threads still interleave between requests, where optimistic
    concurrency does its work."""
    from moto.core.botocore_stubber import BotocoreStubber

    lock = threading.Lock()
    process_request = BotocoreStubber.process_request

    def one_request_at_a_time(self, request):
        with lock:
            return process_request(self, request)

    monkeypatch.setattr(BotocoreStubber, "process_request", one_request_at_a_time)


@pytest.fixture
def serialised_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    serialise_moto(monkeypatch)


@pytest.fixture(params=["sqlite", "dynamodb"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def principals_setting() -> list[dict[str, Any]] | None:
    """The static API keys (``principals`` entries) ``runtime`` is configured with. ``None``: no
    keys, every caller is the local admin; a test module or directory that calls as other
    principals overrides this fixture with its entries."""
    return None


@pytest.fixture
def require_keys_setting() -> bool:
    """``settings.require_keys`` (AGENT_MEMORY_REQUIRE_KEYS) of ``runtime``: a test that needs a
    service started with keys required parametrizes this with ``True``."""
    return False


@pytest.fixture
def audit_usage_setting() -> str:
    """``settings.audit_usage`` of ``runtime``. Off here: a cost row per request, written by a
    background thread, would land in the store snapshots tests take around a request at an
    instant of its own choosing; the tests of the cost rows (tests/spectron, tests/http/
    test_audit_costs.py) override this with ``store``."""
    return "off"


@pytest.fixture
def runtime(store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            principals_setting: list[dict[str, Any]] | None, audit_usage_setting: str,
            require_keys_setting: bool) -> Iterator[Runtime]:
    settings = make_settings(tmp_path, store_kind, audit_usage=audit_usage_setting,
                             **({"require_keys": True} if require_keys_setting else {}))
    if principals_setting is not None:
        settings = dataclasses.replace(settings, principals=parse_principals(None, principals_setting))
    if store_kind == "dynamodb":
        import boto3
        from moto import mock_aws

        from agent_memory.adapters.dynamodb_table import create_table_from_template

        serialise_moto(monkeypatch)
        with mock_aws():
            create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), settings.table_name)
            rt = Runtime(settings)
            set_runtime(rt)
            yield rt
            rt.close()  # background ingestion finishes inside the mock
    else:
        rt = Runtime(settings)
        set_runtime(rt)
        yield rt
        rt.close()
    set_runtime(None)


@dataclass
class ApiResponse:
    status: int
    headers: dict[str, str]
    text: str
    body: bytes = b""  # the body's bytes (a base64-encoded binary response decoded)

    def json(self) -> Any:
        return json.loads(self.text) if self.text else None


class InProcessApi:
    """Calls functions exactly as API Gateway would: a v2 event into ``lambda_handler``."""

    def __init__(self) -> None:
        self.gateway = LocalGateway(REPO)

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                raw: bytes | None = None) -> ApiResponse:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
        hdrs = {"content-type": "application/json", **(headers or {})}
        resp = self.gateway.invoke(method, path, hdrs, data)
        body = resp.get("body") or "".join(resp.get("stream") or [])
        content = base64.b64decode(body) if resp.get("isBase64Encoded") else body.encode()
        return ApiResponse(resp["statusCode"], {k.lower(): v for k, v in (resp.get("headers") or {}).items()},
                           body, content)

    def get(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        return self.request("POST", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("DELETE", path, **kw)


@pytest.fixture
def api(runtime: Runtime) -> InProcessApi:
    return InProcessApi()


@pytest.fixture
def server(runtime: Runtime) -> Iterator[str]:
    srv = make_server("127.0.0.1", 0, REPO)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}"
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def client(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30) as c:
        yield c


class HttpApi:
    """The same interface as ``InProcessApi``, over real HTTP to the local server."""

    def __init__(self, client: httpx.Client):
        self.client = client

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                raw: bytes | None = None) -> ApiResponse:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        hdrs = {"content-type": "application/json", **(headers or {})}
        resp = self.client.request(method, path, content=data, headers=hdrs)
        return ApiResponse(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, resp.text)

    def get(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        return self.request("POST", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("DELETE", path, **kw)


@pytest.fixture(params=["in-process", "http"])
def any_api(request: pytest.FixtureRequest, runtime: Runtime) -> Any:
    """Each test using this runs through in-process v2 events and through the local server."""
    if request.param == "in-process":
        return InProcessApi()
    return HttpApi(request.getfixturevalue("client"))


class ScriptedModel:
    """Wraps the configured language model: counts calls and can inject failures
    (a list of exceptions or ``None`` = delegate), one entry per call."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.calls: dict[str, int] = {"structured": 0, "complete": 0, "stream": 0}
        self.failures: list[BaseException | None] = []
        # Per call kind, for calls that run concurrently (chat extracts while it answers).
        self.kind_failures: dict[str, list[BaseException | None]] = {}

    def _next(self, kind: str) -> None:
        self.calls[kind] += 1
        queue = self.kind_failures.get(kind) or self.failures
        if queue:
            failure = queue.pop(0)
            if failure is not None:
                raise failure

    def structured(self, **kw: Any) -> Any:
        self._next("structured")
        return self.inner.structured(**kw)

    def complete(self, messages: Any, **kw: Any) -> Any:
        self._next("complete")
        return self.inner.complete(messages, **kw)

    def stream(self, messages: Any, **kw: Any) -> Any:
        self._next("stream")
        return self.inner.stream(messages, **kw)


@pytest.fixture
def model(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> ScriptedModel:
    """Every model the runtime hands out goes through one ``ScriptedModel``."""
    scripted = ScriptedModel(runtime.language_model(runtime.settings.models.extraction))
    monkeypatch.setattr(runtime, "language_model", lambda ref: scripted)
    return scripted
