"""Real document responses validate against the schemas openapi.yaml declares for them."""

from __future__ import annotations

from pathlib import Path

import yaml
from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource

from agent_memory.runtime import get_runtime

SPEC = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())
REGISTRY = Registry().with_resource("spec", Resource.opaque(SPEC))
BASE = "/api/v1/{context_id}/documents"
DOCS = "/api/v1/acme/documents"


def check(status: int, path: str, method: str, response) -> None:
    assert response.status == status, response.text
    spec = SPEC["paths"][path][method]["responses"][str(status)]
    if "$ref" in spec:
        spec = SPEC["components"]["responses"][spec["$ref"].rsplit("/", 1)[1]]
    if "content" not in spec:
        return
    media = next(iter(spec["content"].values()))
    ref = media["schema"]["$ref"].replace("#/", "spec#/")
    OAS30Validator({"$ref": ref}, registry=REGISTRY).validate(response.json())


def test_document_responses_match_openapi(api):
    body = {"text": "# Guide\n\nStep one.\n\n## More\n\nStep two.", "labels": ["x"]}
    created = api.post(DOCS, body)
    check(202, BASE, "post", created)
    check(200, BASE, "post", api.post(DOCS, body))
    doc_id = created.json()["id"]
    check(200, f"{BASE}/{{document_id}}", "get", api.get(f"{DOCS}/{doc_id}"))  # ingesting or ready
    get_runtime().ingestion_queue.join(timeout=60)
    check(200, f"{BASE}/{{document_id}}", "get", api.get(f"{DOCS}/{doc_id}"))
    check(200, f"{BASE}/{{document_id}}/chunks", "get", api.get(f"{DOCS}/{doc_id}/chunks?limit=1"))
    check(400, BASE, "post", api.post(DOCS, {"title": "no text"}))
    check(413, BASE, "post", api.post(DOCS, {"text": "a" * (5 * 1024 * 1024 + 1)}))
    check(204, f"{BASE}/{{document_id}}", "delete", api.delete(f"{DOCS}/{doc_id}"))
    check(404, f"{BASE}/{{document_id}}", "get", api.get(f"{DOCS}/{doc_id}"))
