"""Real thread responses validate against the schemas openapi.yaml declares for them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource

SPEC = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())
REGISTRY = Registry().with_resource("spec", Resource.opaque(SPEC))


def check(status: int, path: str, method: str, response) -> None:
    spec_path = SPEC["paths"][path][method]["responses"][str(status)]
    if "$ref" in spec_path:
        spec_path = SPEC["components"]["responses"][spec_path["$ref"].rsplit("/", 1)[1]]
    media = next(iter(spec_path["content"].values()))
    ref = media["schema"]["$ref"].replace("#/", "spec#/")
    OAS30Validator({"$ref": ref}, registry=REGISTRY).validate(response.json())
    assert response.status == status, response.text


@pytest.fixture
def api(as_):
    return as_()


def test_thread_responses_match_openapi(api, as_):
    base = "/api/v1/{context_id}/threads/{thread_id}"
    t = "/threads/schema-check"
    first = {"text": "hello", "entity_id": "e", "metadata": {"a": 1, "b": None, "c": "x", "d": True},
             "acl_readers": ["alice"], "idempotency_key": "k"}
    check(201, f"{base}/turns", "post", api.post(f"{t}/turns", first))
    check(200, f"{base}/turns", "post", api.post(f"{t}/turns", first))  # replay
    for i in range(3):
        api.post(f"{t}/turns", {"text": f"more {i}"})
    check(200, f"{base}/turns", "get", api.get(f"{t}/turns?limit=2"))
    check(200, f"{base}/turns/{{turn_index}}", "get", api.get(f"{t}/turns/1"))
    check(200, f"{base}/context", "post", api.post(f"{t}/context", {"query": "hello", "last_n_turns": 1}))
    check(200, base, "get", api.get(t))
    check(200, f"{base}/acl", "put", api.put(f"{t}/acl", {"acl_readers": []}))
    check(400, f"{base}/turns", "post", api.post(f"{t}/turns", {"text": ""}))
    check(401, base, "get", as_(None).get(t))
    check(403, f"{base}/acl", "put", as_("bob").put(f"{t}/acl", {"acl_readers": None}))
    check(404, f"{base}/turns/{{turn_index}}", "get", api.get(f"{t}/turns/999"))
    check(409, f"{base}/turns", "post", api.post(f"{t}/turns", {"text": "other", "idempotency_key": "k"}))
    check(413, f"{base}/turns", "post", api.post(f"{t}/turns", {"text": "x" * (1024 * 1024 + 1)}))
    check(422, base, "get", api.api.request("GET", "/api/v1/-bad-/threads/x", headers=api.headers))


def test_projection_pending_matches_openapi(api, runtime):
    base = "/api/v1/{context_id}/threads/{thread_id}"
    for i in range(3):
        api.post("/threads/lag/turns", {"text": f"t{i}"})
    runtime.projector.pause()
    try:
        api.post("/threads/lag/turns", {"text": "pending"})
        check(503, f"{base}/context", "post", api.post("/threads/lag/context", {"query": "t", "last_n_turns": 1}))
    finally:
        runtime.projector.resume()
