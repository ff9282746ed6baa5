"""The memory inspector: static files (HTML, one JavaScript module, CSS) served by the local
server at ``/inspector`` and deployable as they are in front of a stack's API. The page
calls only the public API with the key typed into it, so it shows what that key may read."""

from __future__ import annotations

import base64
import json
import mimetypes
from importlib import resources
from typing import Any

PREFIX = "/inspector"
#: Browsers ask the origin's root for its icon; the local server answers it with the inspector's.
FAVICON = "/favicon.ico"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".ico": "image/x-icon"}
_BINARY = (".ico",)
# The page talks to the API it is pointed at (same origin locally, a stack's URL when deployed).
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self' https: http:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")


def is_inspector_path(path: str) -> bool:
    return path in (PREFIX, FAVICON) or path.startswith(PREFIX + "/")


def static_response(method: str, path: str) -> dict[str, Any]:
    """The Lambda-style response for ``path`` under ``/inspector`` or ``/favicon.ico`` (404
    for unknown files)."""
    if method not in ("GET", "HEAD"):
        return _plain(405, "method not allowed", {"Allow": "GET, HEAD"})
    if path == FAVICON:
        path = f"{PREFIX}/favicon.ico"
    if path == PREFIX:
        return {"statusCode": 308, "headers": {"Location": PREFIX + "/"}, "body": "", "isBase64Encoded": False}
    name = path[len(PREFIX) + 1:] or "index.html"
    if "/" in name or name.startswith(".") or not name:
        return _plain(404, "not found")
    ref = resources.files(__package__).joinpath("static", name)
    if not ref.is_file():
        return _plain(404, "not found")
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    content_type = _TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    binary = suffix in _BINARY
    body = base64.b64encode(ref.read_bytes()).decode("ascii") if binary else ref.read_text(encoding="utf-8")
    return {"statusCode": 200, "isBase64Encoded": binary, "body": body,
            "headers": {"Content-Type": content_type, "Cache-Control": "no-cache", "Content-Security-Policy": CSP,
                        "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}}


def _plain(status: int, detail: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    from agent_memory.kernel.errors import PROBLEM_TYPE_BASE

    slug = "not-found" if status == 404 else "method-not-allowed"
    body = {"type": PROBLEM_TYPE_BASE + slug, "title": detail.capitalize(), "status": status, "detail": detail}
    return {"statusCode": status, "headers": {"Content-Type": "application/problem+json", **(headers or {})},
            "body": json.dumps(body), "isBase64Encoded": False}
