"""The inspector's "Download export" button saves the open context's export (GET /export)
as <context>.ndjson, and says why when the key may not export."""

from __future__ import annotations

import json

import httpx

CTX = "acme"


def test_the_download_button_saves_the_contexts_export(page, server):
    with httpx.Client(base_url=server, timeout=30) as c:
        assert c.post(f"/api/v1/{CTX}/facts", json={"text": "I live in Lisbon."}).status_code == 200
    page.goto(f"{server}/inspector/")
    page.get_by_label("Context", exact=True).fill(CTX)
    # The test browser keeps no downloads: the file's name is the download's, its bytes the
    # blob the page hands the browser.
    page.evaluate("""() => { const make = URL.createObjectURL; window.saved = [];
        URL.createObjectURL = (blob) => { window.saved.push(blob); return make(blob); }; }""")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download export").click()
    assert download.value.suggested_filename == f"{CTX}.ndjson"
    lines = page.evaluate("() => window.saved[0].text()").splitlines()
    assert json.loads(lines[0])["type"] == "header" and json.loads(lines[-1])["type"] == "end"
    assert any('"Lisbon"' in line for line in lines)
    assert "Exported acme" in page.locator("#status").inner_text()


def test_against_another_origin_the_download_runs_as_an_export_job(page, server):
    """A deployed stack is another origin (and answers at most 6 MB): the button starts an
    export job, follows its progress and downloads the stream from the job's URL. The other
    origin here is this server behind a route that adds the stack's CORS headers."""
    with httpx.Client(base_url=server, timeout=30) as c:
        assert c.post(f"/api/v1/{CTX}/facts", json={"text": "I live in Lisbon."}).status_code == 200
    remote = "http://stack.example"
    seen: list[str] = []

    def forward(route):
        request = route.request
        seen.append(f"{request.method} {request.url.removeprefix(remote)}")
        cors = {"access-control-allow-origin": server, "access-control-allow-headers": "authorization, content-type",
                "access-control-allow-methods": "GET, POST, OPTIONS"}
        if request.method == "OPTIONS":
            route.fulfill(status=204, headers=cors)
            return
        response = route.fetch(url=server + request.url.removeprefix(remote))
        route.fulfill(response=response, headers={**response.headers, **cors})

    page.route(f"{remote}/**", forward)
    page.goto(f"{server}/inspector/")
    page.get_by_label("Context", exact=True).fill(CTX)
    page.locator("#base-url").fill(remote)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download export").click()
    assert download.value.suggested_filename == f"{CTX}.ndjson"
    assert "POST /api/v1/acme/export/jobs" in seen
    assert "Exported acme" in page.locator("#status").inner_text()
