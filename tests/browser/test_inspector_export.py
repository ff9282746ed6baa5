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
