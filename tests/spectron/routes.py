"""Which operation of ``openapi.yaml`` each public method of the official Spectron client
(``surrealdb.spectron``) calls, found by calling the method against a transport that records
the request instead of sending it (no guessing from the client's README)."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from typing import Any

import yaml

from tests.conftest import REPO

PLACEHOLDER = "__arg__"
CONTEXT = "__ctx__"
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Call:
    method: str
    path: str  # with PLACEHOLDER where the client put one of its arguments


class _Recorded(Exception):
    pass


class _RecordingTransport:
    endpoint = "http://recorder.invalid"
    api_key = "recorder"

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def request(self, method: str, path: str, **_: Any) -> Any:
        self.calls.append(Call(method.upper(), path.split("?")[0]))
        raise _Recorded

    def stream_sse(self, path: str, **_: Any) -> Any:
        self.calls.append(Call("POST", path))
        raise _Recorded

    def close(self) -> None:
        pass


class _AsyncRecordingTransport(_RecordingTransport):
    async def request(self, method: str, path: str, **kw: Any) -> Any:  # type: ignore[override]
        return super().request(method, path, **kw)

    async def close(self) -> None:  # type: ignore[override]
        pass


def _dummy(param: inspect.Parameter) -> Any:
    note = str(param.annotation)
    if param.name == "path" and "IO" in note:  # documents.upload's file
        return b"recorded"
    if param.name == "items":
        return [{"role": "user", "content": PLACEHOLDER}]
    if "Sequence" in note or "list" in note:
        return [PLACEHOLDER]
    if "int" in note and "str" not in note:
        return 1
    return PLACEHOLDER


def _public_methods(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted name, bound method) for every public method of a client and its namespaces."""
    found: list[tuple[str, Any]] = []
    for name in sorted(dir(obj)):
        if name.startswith("_") or name in ("close",):
            continue
        attr = getattr(obj, name)
        if inspect.ismethod(attr):
            found.append((prefix + name, attr))
        elif type(attr).__module__.startswith("surrealdb.spectron._namespaces"):
            found.extend(_public_methods(attr, f"{prefix}{name}."))
    return found


def client_calls(async_client: bool = False) -> dict[str, Call]:
    """Each public method of ``Spectron`` (or ``AsyncSpectron``) and the request it sends."""
    from surrealdb.spectron import AsyncSpectron, Spectron

    transport = _AsyncRecordingTransport() if async_client else _RecordingTransport()
    client = (AsyncSpectron if async_client else Spectron)(CONTEXT, transport=transport)  # type: ignore[arg-type]
    calls: dict[str, Call] = {}
    for name, method in _public_methods(client):
        sig = inspect.signature(method)
        args = [_dummy(p) for p in sig.parameters.values()
                if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
        before = len(transport.calls)
        try:
            result = method(*args)
            if inspect.iscoroutine(result):
                asyncio.run(result)
        except _Recorded:
            pass
        if len(transport.calls) == before + 1:
            calls[name] = transport.calls[-1]
    return calls


def operations() -> dict[str, tuple[str, str]]:
    """operationId -> (METHOD, path template) for every operation in openapi.yaml."""
    spec = yaml.safe_load((REPO / "openapi.yaml").read_text())
    return {op["operationId"]: (method.upper(), path)
            for path, item in spec["paths"].items() for method, op in item.items() if method in METHODS}


def _matches(template: str, path: str) -> bool:
    """A client path fills a ``{parameter}`` of ours only where it put one of its arguments (a
    literal segment such as ``stats`` or ``keywords`` never matches ``{trace_id}``)."""
    want = template.split("/")
    got = path.split("/")
    if len(want) != len(got):
        return False
    for w, g in zip(want, got, strict=True):
        if w.startswith("{") and w.endswith("}"):
            if g not in (PLACEHOLDER, CONTEXT):
                return False
        elif w != g:
            return False
    return True


def operation_of(call: Call, ops: dict[str, tuple[str, str]] | None = None) -> str | None:
    """The operationId the call reaches, or ``None`` when openapi.yaml has no such operation."""
    for op_id, (method, template) in (ops or operations()).items():
        if method == call.method and _matches(template, call.path):
            return op_id
    return None
