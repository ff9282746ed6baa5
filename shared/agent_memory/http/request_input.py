"""What a handler reads of a request: its body (size-capped, JSON, validated into a
request model with a 400 naming the field), query parameters by type, headers, path ids
and the idempotency key. Handlers reach them through ``http.api``."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent_memory.http import safe_json
from agent_memory.http.powertools_resolver import APIGatewayHttpResolver
from agent_memory.kernel.errors import (
    InvalidRequest,
    PayloadTooLarge,
)
from agent_memory.runtime import get_runtime

log = logging.getLogger("agent_memory.http.api")


M = TypeVar("M", bound=BaseModel)


def check_path_ids(route_args: dict[str, Any]) -> None:
    """The one check of the ids a route's path names (``kernel.ids.path_id_problem``: length
    and characters), before its handler reaches any store: a bad one is a 400."""
    from agent_memory.kernel.ids import path_id_problem

    for name, raw in route_args.items():
        if name == "context_id" or not isinstance(raw, str):
            continue
        problem = path_id_problem(name, raw)
        if problem is not None:
            raise InvalidRequest(problem, field=name)


def path_id(raw: str) -> str:
    """An id a route's path names, as the client meant it: the route matches the raw path, so
    a caller-named session ``sess:abc`` arrives percent-encoded (``sess%3Aabc``)."""
    from urllib.parse import unquote

    return unquote(raw)


def raw_body(app: APIGatewayHttpResolver, max_bytes: int | None = None) -> bytes:
    event = app.current_event
    if event.body is None:
        data = b""
    elif event.is_base64_encoded:
        # Not Powertools' ``decoded_body``: it decodes the bytes as UTF-8 again, and a binary
        # body (a multipart upload of a file in another encoding) must stay bytes.
        try:
            data = base64.b64decode(event.body)
        except ValueError as exc:
            raise InvalidRequest("body is not valid base64", field="body") from exc
    else:
        data = event.body.encode("utf-8")
    if max_bytes is not None and len(data) > max_bytes:
        raise PayloadTooLarge(f"request body is {len(data)} bytes; the limit is {max_bytes}")
    return data


def is_json_media_type(content_type: str | None) -> bool:
    """``application/json`` or a ``+json`` type (RFC 6839), parameters aside; no Content-Type
    at all is read as JSON too (a body is JSON on these routes unless its sender says not)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return not media or media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def json_body(app: APIGatewayHttpResolver, max_bytes: int | None = None) -> dict[str, Any]:
    data = raw_body(app, max_bytes)
    if not data.strip():
        raise InvalidRequest("request body is required", field="body")
    content_type = header(app, "content-type")
    if not is_json_media_type(content_type):
        from agent_memory.kernel.errors import UnsupportedMediaType

        raise UnsupportedMediaType(
            f"the body is sent as {(content_type or '').split(';', 1)[0].strip()!r}; this route takes application/json",
            code="json_required", field="content-type")
    try:
        parsed = safe_json.loads(data)
    except safe_json.JsonLimitExceeded as exc:
        raise InvalidRequest(f"request body: {exc}", field=exc.path or "body", limit=exc.limit) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"malformed JSON: {exc}", field="body") from exc
    if not isinstance(parsed, dict):
        raise InvalidRequest("request body must be a JSON object", field="body")
    return parsed


def validate(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "body"
        raise InvalidRequest(f"{field}: {first['msg']}", field=field) from exc


def body(app: APIGatewayHttpResolver, model: type[M], max_bytes: int | None = None,
         optional: bool = False) -> M:
    if optional and not raw_body(app).strip():
        return validate(model, {})
    return validate(model, json_body(app, max_bytes))


def query_int(app: APIGatewayHttpResolver, name: str, default: int, *, minimum: int = 1,
              maximum: int | None = None) -> int:
    raw = app.current_event.get_query_string_value(name)
    if raw is None:
        return default
    try:
        value = int(raw)  # an empty value (``limit=``) is not an integer: 400, not the default
    except ValueError as exc:
        raise InvalidRequest(f"{name} must be an integer", field=name) from exc
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise InvalidRequest(f"{name} must be {bound}", field=name)
    return value


def query_str(app: APIGatewayHttpResolver, name: str) -> str | None:
    """A query value whose empty form is documented as absent: only ``cursor`` (a first page);
    every other value goes through ``query_text``, ``query_choice`` or ``query_int``."""
    value = app.current_event.get_query_string_value(name)
    return value if value not in (None, "") else None


def query_text(app: APIGatewayHttpResolver, name: str) -> str | None:
    """A query value that is absent or says something: empty (``partition=``) is a 400, as every
    other empty query value (``query_str`` is for the cursor, whose empty is documented as absent)."""
    raw = app.current_event.get_query_string_value(name)
    if raw == "":
        raise InvalidRequest(f"{name} is empty: leave it out, or give a value", field=name)
    return raw


def query_choice(app: APIGatewayHttpResolver, name: str, choices: Sequence[str]) -> str | None:
    """One of ``choices`` (compared case-insensitively, answered as listed); absent is ``None``,
    and empty (``kind=``) is a 400 naming the choices, as for every other query value."""
    raw = app.current_event.get_query_string_value(name)
    if raw is None:
        return None
    for choice in choices:
        if raw.strip().lower() == choice.lower():
            return choice
    raise InvalidRequest(f"{name} must be one of {', '.join(choices)}", field=name)


def query_bool(app: APIGatewayHttpResolver, name: str) -> bool | None:
    """``true``/``false`` (also 1/0); absent is ``None``; anything else (empty too) is a 400."""
    raw = app.current_event.get_query_string_value(name)
    if raw is None:
        return None
    value = {"true": True, "1": True, "false": False, "0": False}.get(raw.strip().lower())
    if value is None:
        raise InvalidRequest(f"{name} must be true or false", field=name)
    return value


def query_instant(app: APIGatewayHttpResolver, name: str) -> str | None:
    """An RFC 3339 query parameter, normalised to UTC millisecond form (400 when invalid)."""
    from agent_memory.kernel import timeutil

    raw = app.current_event.get_query_string_value(name)
    if raw is None:
        return None
    try:
        return timeutil.normalise(raw.replace(" ", "+"))  # a raw '+' in a query string reads as a space
    except ValueError as exc:
        raise InvalidRequest(f"{name} must be an RFC 3339 timestamp in the years "
                             f"{timeutil.MIN_YEAR:04d}-{timeutil.MAX_YEAR} (UTC)", field=name) from exc


def header(app: APIGatewayHttpResolver, name: str) -> str | None:
    return app.current_event.headers.get(name)


def idempotency_key(app: APIGatewayHttpResolver) -> str | None:
    """The ``Idempotency-Key`` header, checked: also where the call runs without it (a dry run,
    a reflection not persisted), so a bad key is a 400 on every route that documents it."""
    from agent_memory.services.facts.idempotency import check_key

    key = header(app, "Idempotency-Key")
    if key is not None:
        check_key(key)
    return key


def page_limit(app: APIGatewayHttpResolver) -> int:
    limits = get_runtime().settings.limits
    return query_int(app, "limit", limits.page_default, maximum=limits.page_max)


def referenced_ids(body: Any) -> list[str]:
    """Record ids a response mentions (``turn_…``, ``attr_…``), for forget to find stored replies."""
    found: list[str] = []
    if isinstance(body, dict):
        for value in body.values():
            found += referenced_ids(value)
    elif isinstance(body, list):
        for value in body:
            found += referenced_ids(value)
    elif isinstance(body, str) and "_" in body and body.split("_", 1)[0] in {
            "turn", "attr", "rel", "act", "instr", "unc", "doc", "chunk", "sess", "tturn"}:
        found.append(body)
    return found
