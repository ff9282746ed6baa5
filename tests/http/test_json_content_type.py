"""A JSON route given a body whose Content-Type names another type answers 415
``unsupported-media-type`` (code ``json_required``), documented on every such operation, and
writes nothing; ``application/json``, a ``+json`` type and no Content-Type are read as JSON."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((ROOT / "openapi.yaml").read_text())
PARAMS = {"context_id": "acme", "session_id": "sess_01HV0000000000000000000000", "thread_id": "t1",
          "fact_id": "attr_01HV0000000000000000000000", "uncertainty_id": "unc_01HV0000000000000000000000",
          "principal_id": "alice"}
JSON_OPERATIONS = sorted(
    (method.upper(), path) for path, item in SPEC["paths"].items() for method, op in item.items()
    if method in ("post", "put", "patch", "delete") and "application/json" in op.get("requestBody", {}).get("content", {})
    and not path.endswith("/mcp"))


def _url(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: PARAMS[m.group(1)], path)


def test_the_scan_finds_the_json_routes():
    assert ("POST", "/api/v1/{context_id}/facts") in JSON_OPERATIONS and len(JSON_OPERATIONS) > 20


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_a_body_of_another_type_is_415_on_every_json_route(api, runtime, content_type):
    problems = []
    for method, path in JSON_OPERATIONS:
        r = api.request(method, _url(path), raw=b'{"text": "I live in London."}', headers={"content-type": content_type})
        body = r.json() if r.headers.get("content-type", "").startswith("application/problem+json") else {}
        if r.status != 415 or body.get("code") != "json_required" or not body.get("type", "").endswith(
                "/unsupported-media-type"):
            problems.append(f"{method} {path}: {r.status} {r.text[:120]}")
        elif "415" not in SPEC["paths"][path][method.lower()]["responses"]:
            problems.append(f"{method} {path}: 415 not documented")
    assert not problems, "\n".join(problems)
    assert api.get("/api/v1/acme/entities").json()["entities"] == [], "a refused body writes nothing"


@pytest.mark.parametrize("content_type", [None, "application/json", "application/json; charset=utf-8",
                                          "application/merge-patch+json"])
def test_json_and_no_content_type_are_read_as_json(api, content_type):
    headers = {"content-type": content_type} if content_type else {}
    r = api.request("POST", "/api/v1/acme/facts", raw=b'{"text": "I live in London."}', headers=headers)
    assert r.status in (200, 201), r.text
