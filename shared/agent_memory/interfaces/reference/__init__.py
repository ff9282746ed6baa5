"""The API reference page of the local server, at ``/docs``: Swagger UI from the
``swagger-ui-bundle`` package (the server extra; its files, never a CDN) showing the document
the service serves at ``/api/v1/openapi.json``. The page and the document are static and hold
no memory, so they are served without a key, like the inspector; the page's spec comes from
``/docs/openapi.json`` so it loads on a server with keys required too."""

from __future__ import annotations

import base64
import json
from importlib import resources
from typing import Any

PREFIX = "/docs"
_OURS = {"index.html": "text/html; charset=utf-8", "init.js": "text/javascript; charset=utf-8"}
# The package's files the page loads (the rest of its folder is source maps and other builds).
_VENDORED = {"swagger-ui.css": "text/css; charset=utf-8", "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
             "favicon-32x32.png": "image/png", "favicon-16x16.png": "image/png"}
# Swagger UI sets inline style attributes and reads its spec from this origin; nothing else.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")


def is_reference_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def static_response(method: str, path: str) -> dict[str, Any]:
    """The Lambda-style response for ``path`` under ``/docs``."""
    if method not in ("GET", "HEAD"):
        return _problem(405, "Method not allowed", "the reference page takes GET", "method-not-allowed",
                        {"Allow": "GET, HEAD"})
    if path == PREFIX:
        return {"statusCode": 308, "headers": {"Location": PREFIX + "/"}, "body": "", "isBase64Encoded": False}
    name = path[len(PREFIX) + 1:] or "index.html"
    if name == "openapi.json":
        from agent_memory.http.api import openapi_response

        response = openapi_response("json")
        return _ok(str(response.body), "application/json")
    if name in _OURS:
        return _ok(resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8"), _OURS[name])
    if name not in _VENDORED:
        return _problem(404, "Not found", f"no such file: {path}", "not-found")
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        return _problem(501, "Not implemented", "the reference page needs swagger-ui-bundle (the server extra: "
                        "pip install 'agent-memory[server]')", "not-implemented")
    data = (swagger_ui_path / name).read_bytes()
    if _VENDORED[name].startswith("image/"):
        return _ok(base64.b64encode(data).decode("ascii"), _VENDORED[name], binary=True)
    return _ok(data.decode("utf-8"), _VENDORED[name])


def _ok(body: str, content_type: str, *, binary: bool = False) -> dict[str, Any]:
    return {"statusCode": 200, "isBase64Encoded": binary, "body": body,
            "headers": {"Content-Type": content_type, "Cache-Control": "no-cache", "Content-Security-Policy": CSP,
                        "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}}


def _problem(status: int, title: str, detail: str, slug: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    from agent_memory.kernel.errors import PROBLEM_TYPE_BASE

    body = {"type": PROBLEM_TYPE_BASE + slug, "title": title, "status": status, "detail": detail}
    return {"statusCode": status, "headers": {"Content-Type": "application/problem+json", **(headers or {})},
            "body": json.dumps(body), "isBase64Encoded": False}
