"""What a handler answers with: problem documents for domain errors, JSON, empty, bytes,
redirect and streamed (SSE, NDJSON) responses, with the headers the API documents
(``X-Memory-Degraded``, ``X-Erasure-Receipt``). Handlers reach them through ``http.api``."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from agent_memory.http.powertools_resolver import Response
from agent_memory.kernel.errors import (
    PROBLEM_TYPE_BASE,
    DomainError,
)

log = logging.getLogger("agent_memory.http.api")


def problem_body(status: int, title: str, detail: str, slug: str, **extensions: Any) -> dict[str, Any]:
    body = {"type": PROBLEM_TYPE_BASE + slug, "title": title, "status": status, "detail": detail}
    body.update({k: v for k, v in extensions.items() if v is not None})
    return body


def problem_response(status: int, title: str, detail: str, slug: str, headers: dict[str, str] | None = None,
                     **extensions: Any) -> Response:
    return Response(status_code=status, content_type="application/problem+json",
                    body=json.dumps(problem_body(status, title, detail, slug, **extensions)), headers=headers)


def error_response(exc: DomainError) -> Response:
    return problem_response(exc.status, exc.title, exc.detail, exc.type_slug, headers=exc.headers or None,
                            code=exc.code, **exc.extensions)


DEGRADED_HEADER = "X-Memory-Degraded"


def answer(body: dict[str, Any], degraded: str | None) -> dict[str, Any] | Response:
    """A read's 200 body; when it was answered degraded (``search-unavailable``: from the
    record store alone) the same body with the ``X-Memory-Degraded`` header."""
    if degraded is None:
        return body
    return json_response(body, headers={DEGRADED_HEADER: degraded})


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None, *,
                  ensure_ascii: bool = True) -> Response:
    """``ensure_ascii=False`` for text-bearing bodies (turns, chunks): escaping every non-ASCII
    character would multiply their size against Lambda's 6 MB response limit."""
    return Response(status_code=status, content_type="application/json",
                    body=json.dumps(body, ensure_ascii=ensure_ascii), headers=headers)


def empty_response(status: int = 204) -> Response:
    return Response(status_code=status, content_type="application/json", body="")


#: A removal that answers 204 names its erasure receipt here (``GET /receipts/{id}``).
RECEIPT_HEADER = "X-Erasure-Receipt"


def receipted_empty(receipt: dict[str, Any] | None) -> Response:
    """204 naming the removal's receipt (``services/operations/receipts.py``)."""
    headers = {RECEIPT_HEADER: receipt["id"]} if receipt and receipt.get("id") else None
    return Response(status_code=204, content_type="application/json", body="", headers=headers)


# A caller's own bytes served back (``GET /documents/{id}/raw``): a download, never a page of
# this origin (the inspector's): no sniffing, no scripts, no plugins, not framed.
DOWNLOAD_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
                    "Content-Disposition": "attachment",
                    "Content-Security-Policy": "default-src 'none'; sandbox; frame-ancestors 'none'"}


def bytes_response(data: bytes, content_type: str, headers: dict[str, str] | None = None) -> Response:
    """Binary bytes as they are (API Gateway gets them base64-encoded, ``isBase64Encoded``)."""
    return Response(status_code=200, content_type=content_type, body=data, headers=headers)


def raw_response(status: int, headers: dict[str, str], body: bytes) -> Response:
    """A response another layer produced whole (the MCP transport's): status, headers, text body."""
    headers = dict(headers)
    content_type = headers.pop("content-type", None) or "application/json"
    return Response(status_code=status, content_type=content_type, body=body.decode("utf-8"),
                    headers=headers or None)


def openapi_response(fmt: str) -> Response:
    """openapi.yaml as the service serves it (``GET /api/v1/openapi.json`` or ``.yaml``): the
    package's copy, since a deployed function has no repo root (tests/deploy/served_spec.py
    writes it)."""
    from importlib import resources

    document = resources.files(__package__).joinpath("openapi.json").read_text(encoding="utf-8")
    if fmt == "json":
        return Response(status_code=200, content_type="application/json", body=document)
    import yaml

    return Response(status_code=200, content_type="application/yaml; charset=utf-8",
                    body=yaml.safe_dump(json.loads(document), sort_keys=False, allow_unicode=True))


def redirect_response(location: str, status: int = 303) -> Response:
    return Response(status_code=status, content_type="application/json", body="",
                    headers={"Location": location, "Cache-Control": "no-store"})


def sse_stream(events: Iterable[tuple[str, Any]]) -> Iterator[str]:
    """Server-sent events (docs/decisions.md, "SSE"): one frame per ``(event, data)``, then
    ``data: [DONE]``. An ``error`` event's data is a domain error, framed as its problem document."""
    for event, data in events:
        if isinstance(data, DomainError):
            data = problem_body(data.status, data.title, data.detail, data.type_slug, code=data.code,
                                **data.extensions)
        yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"


def sse_response(degraded: str | None = None) -> Response:
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    if degraded is not None:
        headers[DEGRADED_HEADER] = degraded
    return Response(status_code=200, content_type="text/event-stream", headers=headers, body="")


def ndjson_response(filename: str) -> Response:
    """The head of a streamed NDJSON download (an export); its lines go in by ``attach_stream``."""
    return Response(status_code=200, content_type="application/x-ndjson", body="",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"})
