"""Every operation in openapi.yaml declares the schema of its success response, every schema
compiles as JSON Schema (tests/openapi_schemas.py), and real responses of the memory read
routes validate against theirs (both stores, in-process and over the local server)."""

from __future__ import annotations

from urllib.parse import quote

import jsonschema
import pytest
from openapi_schemas import assert_matches, component, schema_for, spec, to_json_schema

CTX = "/api/v1/acme"
METHODS = {"get", "post", "put", "delete", "patch"}


def operations():
    for path, item in spec()["paths"].items():
        for method, op in item.items():
            if method in METHODS:
                yield method.upper(), path, op


@pytest.mark.parametrize("method,path,op", list(operations()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_success_response_declares_a_schema(method, path, op):
    successes = {s: r for s, r in op["responses"].items() if str(s).startswith("2")}
    assert successes, f"{method} {path} declares no 2xx response"
    for status, response in successes.items():
        if str(status) == "204" or (op["operationId"] == "mcp" and str(status) == "202"):
            assert "content" not in response  # (MCP: a notification is accepted with no body)
            continue
        content = response.get("content") or {}
        assert content, f"{method} {path} {status} declares no body"
        for media, body in content.items():
            assert "schema" in body, f"{method} {path} {status} {media} has no schema"
            # The $defs (every component) are checked once, below; here the route's own schema.
            own = {k: v for k, v in schema_for(body["schema"]).items() if k != "$defs"}
            jsonschema.Draft202012Validator.check_schema(own)


def test_every_component_schema_compiles():
    # One document holding every component as $defs: checking it checks each of them (checking
    # component by component re-checked all the $defs every time, which took half a minute).
    every = schema_for({})
    assert set(every["$defs"]) == set(spec()["components"]["schemas"])
    jsonschema.Draft202012Validator.check_schema(every)
    for name in spec()["components"]["schemas"]:
        assert component(name)["$ref"] == f"#/$defs/{name}"


def test_nullable_becomes_json_schema():
    assert to_json_schema({"type": "string", "nullable": True}) == {"type": ["string", "null"]}
    assert to_json_schema({"type": "string", "enum": ["a"], "nullable": True}) == {
        "type": ["string", "null"], "enum": ["a", None]}
    ref = to_json_schema({"allOf": [{"$ref": "#/components/schemas/Problem"}], "nullable": True})
    assert ref == {"anyOf": [{"allOf": [{"$ref": "#/$defs/Problem"}]}, {"type": "null"}]}
    schema = schema_for({"$ref": "#/components/schemas/MemoryAttribute"})
    attribute = {"id": "attr_1", "entity": "entity:person/user", "key": "k", "value": "v",
                 "memoryCategory": "identity", "importance": 1.0, "validFrom": None, "validUntil": None,
                 "supersedes": None, "supersededBy": None,
                 "source": {"kind": "turn", "ref": None, "sessionId": None}, "createdAt": "2026-01-01T00:00:00Z"}
    jsonschema.validate(attribute, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**attribute, "supersedes": 3}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k: v for k, v in attribute.items() if k != "validUntil"}, schema)


def test_every_memory_read_route_answers_with_its_schema(any_api):
    """One pass over every route of the read area, on a seeded context."""
    for text in ("I live in London.", "I like sushi. My sister Emma lives in Oslo.", "Always answer in German.",
                 "I think I work at Globex.", "I ran a marathon yesterday."):
        assert any_api.post(f"{CTX}/facts", {"text": text}).status == 200
    gets = ["/state", "/state?limit=2", "/profile", "/entities", "/entities?type=person&count=true",
            "/entities/person/user", "/entities/person/user?asOf=2020-01-01T00:00:00Z",
            "/entities/person/user/history", "/entities/person/user/history/location",
            "/attributes", "/attributes?entity=person/user&key=location", "/relations?src=person/user",
            "/relations?dst=person/emma&label=sister", "/actions?actor=person/user&count=true", "/instructions",
            "/uncertainty?resolved=false", "/entities/person/nobody", "/entities?cursor=bad"]
    for path in gets:
        r = any_api.get(f"{CTX}{path}")
        assert r.status in (200, 400, 404), (path, r.text)
        assert_matches("GET", f"{CTX}{path}", r)
    cursor = any_api.get(f"{CTX}/entities?limit=1").json()["page"]["nextCursor"]
    assert_matches("GET", f"{CTX}/entities", any_api.get(f"{CTX}/entities?limit=1&cursor={quote(cursor)}"))
    unc = any_api.get(f"{CTX}/uncertainty").json()["items"][0]["id"]
    r = any_api.post(f"{CTX}/uncertainty/{unc}/resolve", {"acceptedValue": "Globex"})
    assert r.status == 200 and assert_matches("POST", f"{CTX}/uncertainty/{unc}/resolve", r)["fact"]
    r = any_api.post(f"{CTX}/forget", {"query": "marathon", "dryRun": True})
    assert_matches("POST", f"{CTX}/forget", r)
    r = any_api.delete(f"{CTX}/entities/person/emma")
    assert r.status == 204 and assert_matches("DELETE", f"{CTX}/entities/person/emma", r) is None
