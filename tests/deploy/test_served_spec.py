"""The service serves openapi.yaml (``GET /api/v1/openapi.json`` and ``.yaml``) from the
package's copy, which must be openapi.yaml as it is (``python tests/deploy/served_spec.py --write``)."""

from __future__ import annotations

from typing import Any

import pytest
import served_spec
import yaml

from tests.access.test_access_api import KEYS, PRINCIPALS

SPEC = yaml.safe_load(served_spec.SPEC.read_text(encoding="utf-8"))


def test_the_served_copy_is_openapi_yaml_as_it_is():
    assert not served_spec.stale(), "run python tests/deploy/served_spec.py --write"


@pytest.mark.parametrize("store_kind", ["sqlite"], indirect=True)
def test_the_service_serves_its_spec_as_json_and_yaml(api):
    key = {"authorization": f"Bearer {KEYS['alice']}"}
    r = api.get("/api/v1/openapi.json", headers=key)
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == SPEC
    r = api.get("/api/v1/openapi.yaml", headers=key)
    assert r.status == 200 and r.headers["content-type"].startswith("application/yaml")
    assert yaml.safe_load(r.text) == SPEC
    # the spec describes its own routes
    assert {"/api/v1/openapi.json", "/api/v1/openapi.yaml", "/api/v1/{context_id}/mcp"} <= set(SPEC["paths"])


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


@pytest.mark.parametrize("store_kind", ["sqlite"], indirect=True)
@pytest.mark.parametrize("require_keys_setting", [True])
def test_with_keys_required_any_key_reads_it_and_no_key_gets_401(api):
    for path in ("/api/v1/openapi.json", "/api/v1/openapi.yaml"):
        assert api.get(path).status == 401
        assert api.get(path, headers={"authorization": "Bearer nope"}).status == 401
        assert api.get(path, headers={"authorization": f"Bearer {KEYS['support']}"}).status == 200


@pytest.mark.parametrize("store_kind", ["sqlite"], indirect=True)
def test_the_sdk_reads_it(server):
    from agent_memory.client import AgentMemory

    with AgentMemory("acme", base_url=server, api_key=KEYS["bob"]) as memory:
        assert memory.openapi() == SPEC
        assert yaml.safe_load(memory.openapi_yaml()) == SPEC
