"""Validate real responses against the schemas openapi.yaml declares for them.

``assert_matches(method, path, response)`` finds the operation whose path template matches
``path``, takes the schema of the response's status and content type, and validates the
body with jsonschema. OpenAPI 3.0 schemas become JSON Schema (draft 2020-12) on the way:
``components/schemas`` turn into ``$defs`` (``$ref`` rewritten, so recursion works),
``nullable: true`` becomes a ``"null"`` type (or an ``anyOf`` with ``{"type": "null"}``
when the schema has no ``type``), and ``example`` is dropped. Any route can use it.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

REPO = Path(__file__).resolve().parents[1]
_REF = "#/components/schemas/"


@functools.cache
def spec() -> dict[str, Any]:
    return yaml.safe_load((REPO / "openapi.yaml").read_text(encoding="utf-8"))


def to_json_schema(node: Any) -> Any:
    """One OpenAPI 3.0 schema object (recursively) as JSON Schema."""
    if isinstance(node, list):
        return [to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("nullable", "example", "xml", "externalDocs", "discriminator"):
            continue
        if key == "$ref" and isinstance(value, str) and value.startswith(_REF):
            out[key] = "#/$defs/" + value[len(_REF):]
        elif key in ("properties", "patternProperties", "$defs"):
            out[key] = {k: to_json_schema(v) for k, v in value.items()}
        else:
            out[key] = to_json_schema(value)
    if node.get("nullable") is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            return {"anyOf": [out, {"type": "null"}]}
    return out


@functools.cache
def _defs() -> dict[str, Any]:
    return {name: to_json_schema(s) for name, s in spec()["components"]["schemas"].items()}


def schema_for(schema: dict[str, Any]) -> dict[str, Any]:
    """A standalone JSON Schema for an OpenAPI schema (with every component as ``$defs``)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **to_json_schema(copy.deepcopy(schema)),
            "$defs": _defs()}


def component(name: str) -> dict[str, Any]:
    return schema_for({"$ref": _REF + name})


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    """Follow a ``#/components/...`` reference (responses, parameters)."""
    while "$ref" in node:
        target: Any = spec()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _template_regex(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + "$")


def operation(method: str, path: str) -> tuple[str, dict[str, Any]]:
    """The (template, operation) of openapi.yaml serving ``method path`` (literal segments
    win over parameters, as in API Gateway)."""
    bare = path.split("?", 1)[0]
    matches = [(t, item) for t, item in spec()["paths"].items()
               if method.lower() in item and _template_regex(t).match(bare)]
    if not matches:
        raise AssertionError(f"{method} {bare} is not an operation of openapi.yaml")
    template, item = min(matches, key=lambda m: m[0].count("{"))
    return template, item[method.lower()]


def response_schema(method: str, path: str, status: int, content_type: str = "application/json") -> dict | None:
    """The JSON Schema for one response, or ``None`` when openapi.yaml declares no body."""
    template, op = operation(method, path)
    responses = op.get("responses", {})
    declared = responses.get(str(status)) or responses.get("default")
    if declared is None:
        raise AssertionError(f"{method} {template} does not declare status {status}")
    content = _resolve(declared).get("content")
    if not content:
        return None
    media = content.get(content_type.split(";")[0].strip())
    if media is None:
        raise AssertionError(f"{method} {template} {status} declares no {content_type} body")
    return schema_for(media["schema"])


def assert_matches(method: str, path: str, response: Any) -> Any:
    """Validate a response (``status``, ``headers``, ``text``) against openapi.yaml; returns
    the parsed body."""
    content_type = response.headers.get("content-type", "application/json")
    schema = response_schema(method, path, response.status, content_type)
    if schema is None:
        assert not response.text, f"{method} {path} -> {response.status} has a body openapi.yaml does not declare"
        return None
    body = json.loads(response.text)
    jsonschema.Draft202012Validator(schema).validate(body)
    return body


def validate(schema_name: str, instance: Any) -> None:
    jsonschema.Draft202012Validator(component(schema_name)).validate(instance)
