"""``GET /documents/{id}/raw`` serves a caller's bytes as a download, never as a page of the
service's origin (the inspector's): an uploaded HTML file with a script comes back with
``Content-Disposition: attachment``, ``nosniff`` and a CSP that runs nothing, on both stores,
in process and through the local server."""

from __future__ import annotations

import time
from typing import Any

import httpx

DOCS = "/api/v1/acme/documents"
PAGE = b"<html><head><title>Guide</title><script>steal(document.cookie)</script></head>" \
       b"<body><h1>Office guide</h1><p>The office opens at nine.</p></body></html>"


def test_an_uploaded_html_file_comes_back_as_an_inert_download(any_api: Any, runtime: Any):
    request = httpx.Request("POST", "http://x" + DOCS, files={"file": ("guide.html", PAGE, "text/html")})
    body = request.read()
    up = any_api.request("POST", DOCS, raw=body, headers={"content-type": request.headers["content-type"]})
    assert up.status in (200, 201, 202), up.text
    doc_id = up.json()["id"]
    deadline = time.monotonic() + 30
    while any_api.get(f"{DOCS}/{doc_id}").json()["status"] not in ("ready", "failed") and time.monotonic() < deadline:
        time.sleep(0.05)
    raw = any_api.get(f"{DOCS}/{doc_id}/raw")
    assert raw.status == 200
    assert raw.headers["content-disposition"].startswith("attachment")
    assert raw.headers["x-content-type-options"] == "nosniff"
    csp = raw.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "sandbox" in csp
