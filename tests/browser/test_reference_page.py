"""The API reference page (/docs) in Debian's Chromium against the local server: Swagger UI
from the swagger-ui-bundle package showing the spec the service serves, on a server with keys
required, with no request leaving the server's origin."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import expect

pytest.importorskip("swagger_ui_bundle")


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return [{"key": "key-admin-reference-000", "principal": "ops", "admin": True}]


def test_the_files_are_the_packages_and_the_api_still_wants_a_key(server):
    from swagger_ui_bundle import swagger_ui_path

    with httpx.Client(base_url=server) as c:
        assert c.get("/docs").status_code == 308
        r = c.get("/docs/")
        assert r.status_code == 200 and "text/html" in r.headers["content-type"]
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert c.get("/docs/swagger-ui-bundle.js").content == (swagger_ui_path / "swagger-ui-bundle.js").read_bytes()
        assert c.get("/docs/swagger-ui.css").headers["content-type"].startswith("text/css")
        assert c.get("/docs/index.css").status_code == 404  # only the files the page loads
        assert c.get("/docs/../openapi.yaml").status_code == 404
        assert c.post("/docs/").status_code == 405
        assert c.get("/docs/openapi.json").json()["paths"]  # the page's copy needs no key ...
        assert c.get("/api/v1/openapi.json").status_code == 401  # ... the API's route does


def test_the_page_renders_the_spec_with_no_outside_request(page, server):
    origin = urlsplit(server).netloc
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(f"{server}/docs/")
    expect(page.get_by_text("agent-memory", exact=False).first).to_be_visible()
    # an operation of the spec, rendered: the MCP route and its description
    mcp = page.locator("#operations-mcp-mcp")
    expect(mcp).to_be_visible()
    mcp.locator(".opblock-summary").click()
    expect(mcp.get_by_text("streamable HTTP", exact=False).first).to_be_visible()
    outside = [u for u in requests if not u.startswith("data:") and urlsplit(u).netloc != origin]
    assert requests and outside == [], outside
