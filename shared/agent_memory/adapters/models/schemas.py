"""JSON schemas of structured output for the providers: ``$ref``s inlined, OpenAI's strict mode
(every property required, no extra properties), names providers accept, and provider output
validated into the requested pydantic model (``ModelOutputInvalid`` when it does not fit)."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent_memory.ports import ModelOutputInvalid

M = TypeVar("M", bound=BaseModel)


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of a JSON schema with every local ``$ref`` replaced by its definition.

    Providers differ in how well they follow ``$defs`` (some tool-use implementations
    ignore them), and inlining removes the question. Sibling keys of a ``$ref`` (pydantic
    puts ``description`` there) override the referenced definition. A recursive model
    cannot be inlined: the recursive ``$ref`` is kept together with ``$defs``.
    """
    root = copy.deepcopy(dict(schema))
    defs = root.get("$defs", {})
    recursive = False

    def resolve(node: Any, stack: tuple[str, ...]) -> Any:
        nonlocal recursive
        if isinstance(node, list):
            return [resolve(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/"):]
            if name in stack or name not in defs:
                recursive = recursive or name in stack
                return {key: resolve(value, stack) for key, value in node.items()}
            merged = {**resolve(defs[name], (*stack, name)),
                      **{k: resolve(v, stack) for k, v in node.items() if k != "$ref"}}
            return merged
        return {key: resolve(value, stack) for key, value in node.items() if key != "$defs"}

    out = resolve(root, ())
    if recursive:
        out["$defs"] = {name: resolve(d, (name,)) for name, d in defs.items()}
    return out


def strict_json_schema(schema: type[BaseModel] | Mapping[str, Any]) -> dict[str, Any]:
    """Make a pydantic model's JSON schema acceptable to OpenAI structured outputs (strict mode).

    Strict mode requires every property to be listed in ``required`` and every object to
    set ``additionalProperties: false``; optional fields stay optional through their
    ``null`` variant, which pydantic already emits for ``X | None``. ``default`` is
    dropped (the model must emit every field, so it carries no meaning and some servers
    reject it), ``oneOf`` becomes ``anyOf`` (strict mode has no ``oneOf``) and refs are
    inlined. Free-form dict fields (``additionalProperties: {schema}``) are left alone:
    strict mode cannot express them, so such models should not be used with it.
    """
    raw = schema.model_json_schema() if isinstance(schema, type) else dict(schema)

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(item) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("default", "discriminator"):
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):  # maps of names, not keywords
                out[key] = {name: fix(sub) for name, sub in value.items()}
            else:
                out[key] = fix(value)
        node = out
        if "oneOf" in node:
            node["anyOf"] = node.pop("oneOf")
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties", {})
            node["required"] = list(props)
            node.setdefault("additionalProperties", False)
        return node

    return fix(inline_refs(raw))


def schema_name(schema: type[BaseModel]) -> str:
    """A name valid for OpenAI json_schema and Bedrock tool names: ``[a-zA-Z0-9_-]{1,64}``."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64]
    return name or "result"


def validate_output(schema: type[M], data: Any) -> M:
    """Validate provider output (a JSON string or a parsed object) into ``schema``."""
    try:
        if isinstance(data, str | bytes):
            return schema.model_validate_json(data)
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ModelOutputInvalid(f"model output does not match {schema.__name__}: {exc}") from exc
