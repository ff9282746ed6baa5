"""The API Gateway stand-in: routes from template.yaml and openapi.yaml, each request turned
into an HTTP API payload 2.0 event for its function's ``lambda_handler``, called in-process.
The local server (``local_server``, over uvicorn via ``asgi_gateway``) and the in-process test
client both drive it."""
from __future__ import annotations

import base64
import importlib.util
import json
import logging
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from agent_memory.adapters.upload_store import LOCAL_UPLOAD_PATH
from agent_memory.cfn_template import function_routes, load_openapi, load_template, repo_root
from agent_memory.interfaces import inspector, reference

log = logging.getLogger("agent_memory.http.local_server")

MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway HTTP API payload limit


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # template path with {params}
    pattern: re.Pattern[str]
    handler: str  # functions/<area>/app.lambda_handler

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"


def _compile(path: str) -> re.Pattern[str]:
    regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))
    return re.compile(f"^{regex}$")


def load_routes(root: Path | None = None) -> list[Route]:
    """Routes wired in template.yaml; each must exist in openapi.yaml (tests check both ways)."""
    root = root or repo_root()
    wired = function_routes(load_template(root / "template.yaml"))
    spec = load_openapi(root / "openapi.yaml")
    routes = []
    for (method, path), handler in wired.items():
        if method.lower() not in (spec.get("paths", {}).get(path) or {}):
            raise RuntimeError(f"template.yaml wires {method} {path} but openapi.yaml does not define it")
        routes.append(Route(method, path, _compile(path), handler))
    # Literal segments win over parameters, as in API Gateway: sort by fewest params first.
    routes.sort(key=lambda r: (r.path.count("{"), -len(r.path)))
    return routes


class HandlerRegistry:
    """Imports each function module once (by file path, like Lambda's task root)."""

    def __init__(self, root: Path):
        self.root = root
        self._handlers: dict[str, Callable[[dict, Any], dict]] = {}
        self._lock = threading.Lock()

    def get(self, handler: str) -> Callable[[dict, Any], dict]:
        with self._lock:
            if handler not in self._handlers:
                module_path, _, func = handler.rpartition(".")
                module_name = module_path.replace("/", ".")
                spec = importlib.util.spec_from_file_location(module_name, self.root / f"{module_path}.py")
                if spec is None or spec.loader is None:
                    raise RuntimeError(f"cannot load handler {handler}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[module_name] = module
                spec.loader.exec_module(module)
                self._handlers[handler] = getattr(module, func)
            return self._handlers[handler]


class LocalLambdaContext:
    """The local server's stand-in for the context Lambda hands a handler: the attributes
    Powertools and our handlers read (``http.lambda_runtime.LambdaContext`` is the deployed one)."""

    def __init__(self, function_name: str, timeout_s: float = 29.0):
        self.function_name = function_name
        self._ends_at = time.monotonic() + timeout_s
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:local:000000000000:function:{function_name}"
        self.memory_limit_in_mb = 512
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"

    # The local server can write a response incrementally (SSE); Lambda behind API
    # Gateway cannot, so handlers check this before handing back an iterator.
    supports_streaming = True

    def get_remaining_time_in_millis(self) -> int:
        """Like Lambda's: what is left of the function timeout (locally the request deadline
        setting plus its margin, so the resolver's budget is the setting itself)."""
        return max(0, int((self._ends_at - time.monotonic()) * 1000))


def build_event(route: Route, method: str, raw_path: str, raw_query: str, headers: dict[str, str],
                body: bytes, path_params: dict[str, str], source_ip: str) -> dict[str, Any]:
    query: dict[str, str] = {}
    for k, v in parse_qsl(raw_query, keep_blank_values=True):
        query[k] = f"{query[k]},{v}" if k in query else v  # API Gateway v2 joins repeats with commas
    try:
        text = body.decode("utf-8")
        is_b64 = False
    except UnicodeDecodeError:
        text = base64.b64encode(body).decode()
        is_b64 = True
    now = time.time()
    return {
        "version": "2.0",
        "routeKey": route.route_key,
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": {k.lower(): v for k, v in headers.items()},
        "queryStringParameters": query or None,
        "pathParameters": path_params or None,
        "requestContext": {
            "accountId": "000000000000", "apiId": "local", "domainName": "localhost", "domainPrefix": "localhost",
            "http": {"method": method, "path": raw_path, "protocol": "HTTP/1.1", "sourceIp": source_ip,
                     "userAgent": headers.get("user-agent", "")},
            "requestId": uuid.uuid4().hex, "routeKey": route.route_key, "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)), "timeEpoch": int(now * 1000),
        },
        "body": text if body else None,
        "isBase64Encoded": is_b64,
    }


class LocalGateway:
    """Routes a request to its function and returns the Lambda response dict."""

    def __init__(self, root: Path | None = None):
        self.root = root or repo_root()
        self.routes = load_routes(self.root)
        self.handlers = HandlerRegistry(self.root)

    def _template(self, path: str) -> str | None:
        """The most specific path template ``path`` matches (literal segments win), whatever
        the method: ``/documents/keywords`` is the keywords resource, not document "keywords"."""
        for route in self.routes:
            if route.pattern.match(path):
                return route.path
        return None

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        # A method the path's own template does not take is 405 (its Allow is openapi.yaml's
        # methods for that path), not a sibling template's route: API Gateway would send
        # DELETE /documents/keywords to DELETE /documents/{document_id}, a 404 deployed.
        template = self._template(path)
        for route in self.routes:
            if route.method == method and route.path == template:
                m = route.pattern.match(path)
                if m:
                    return route, m.groupdict()
        return None

    def methods_for(self, path: str) -> list[str]:
        """The methods routed for ``path`` (for OPTIONS and 405-free HEAD)."""
        template = self._template(path)
        return sorted({r.method for r in self.routes if r.path == template})

    def allow_header(self, path: str) -> str | None:
        """``Allow`` for a known path (OPTIONS and 405 give the same list), None for an unknown one."""
        methods = self.methods_for(path)
        if not methods:
            return None
        return ", ".join([*methods, *(["HEAD"] if "GET" in methods else []), "OPTIONS"])

    def invoke(self, method: str, target: str, headers: dict[str, str], body: bytes,
               source_ip: str = "127.0.0.1") -> dict[str, Any]:
        parts = urlsplit(target)
        if inspector.is_inspector_path(parts.path):  # the inspector page, same origin as the API
            return inspector.static_response(method, parts.path)
        if reference.is_reference_path(parts.path):  # the API reference page (/docs)
            return reference.static_response(method, parts.path)
        if parts.path.startswith(LOCAL_UPLOAD_PATH):  # presigned uploads to the local upload store
            return local_upload(method, unquote(parts.path[len(LOCAL_UPLOAD_PATH):]), parts.query, headers, body)
        found = self.match(method, parts.path)
        if found is None:
            # A known path asked with a method it does not route is 405 naming the ones it does
            # (RFC 9110 15.5.6); the deployed HTTP API answers what API Gateway answers (404).
            allow = self.allow_header(parts.path)
            if allow is not None:
                return _problem(405, "Method not allowed", f"{method} is not routed for {parts.path}; allowed: {allow}",
                                "method-not-allowed", headers={"Allow": allow})
            return _problem(404, "Not found", f"no route for {method} {parts.path}")
        route, params = found
        event = build_event(route, method, parts.path, parts.query, headers, body, params, source_ip)
        del body  # the event holds the body now; one copy per request, not two
        handler = self.handlers.get(route.handler)
        lambda_context = LocalLambdaContext(route.handler.split("/")[1], _function_timeout_s())
        # A handler that calls the API itself (the MCP route's tools) comes back through here,
        # in-process, as API Gateway would route it (http.mcp_route).
        lambda_context.invoke_api = self.invoke
        return handler(event, lambda_context)


def local_upload(method: str, key: str, query: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """A PUT to a URL the local upload store signed (``adapters.upload_store.LocalUploadStore``):
    200 once stored; 403 for a bad or expired signature, 400 for another size or type, 405 for
    another method, 501 when this server's upload store is not the local one (a bucket is configured:
    the URLs it signs point at S3)."""
    from agent_memory.adapters.upload_store import UploadRefused
    from agent_memory.runtime import get_runtime

    if method == "GET" and key.startswith("exports/"):
        return _local_download(key, query)
    if method != "PUT":
        return _problem(405, "Method not allowed", "a presigned upload URL takes PUT", "method-not-allowed",
                        headers={"Allow": "PUT"})
    accept = getattr(get_runtime().upload_store, "accept_put", None)
    if accept is None:
        return _problem(501, "Not implemented", "this server signs no local uploads (an upload bucket is configured)",
                        "not-implemented")
    try:
        accept(key, query, headers.get("content-type"), bytes(body))
    except UploadRefused as exc:
        slug = {403: "forbidden", 404: "not-found"}.get(exc.status, "invalid-request")
        return _problem(exc.status, {403: "Forbidden", 404: "Not found"}.get(exc.status, "Bad request"),
                        exc.detail, slug)
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}",
            "isBase64Encoded": False}


def _local_download(key: str, query: str) -> dict[str, Any]:
    """A GET of a URL the local upload store signed for an export job's stream."""
    import base64

    from agent_memory.adapters.upload_store import UploadRefused
    from agent_memory.runtime import get_runtime

    serve = getattr(get_runtime().upload_store, "serve_get", None)
    if serve is None:
        return _problem(501, "Not implemented", "this server signs no local downloads (an upload bucket is "
                        "configured)", "not-implemented")
    try:
        data, content_type, filename = serve(key, query)
    except UploadRefused as exc:
        slug = {403: "forbidden", 404: "not-found"}.get(exc.status, "invalid-request")
        return _problem(exc.status, {403: "Forbidden", 404: "Not found"}.get(exc.status, "Bad request"),
                        exc.detail, slug)
    safe = "".join(c for c in filename if c.isalnum() or c in "._-") or "export.ndjson"
    return {"statusCode": 200, "isBase64Encoded": True, "body": base64.b64encode(data).decode("ascii"),
            "headers": {"Content-Type": content_type, "Content-Disposition": f'attachment; filename="{safe}"',
                        "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}}


def _function_timeout_s() -> float:
    """The local stand-in for a function's timeout: the request deadline plus its margin."""
    from agent_memory.runtime import get_runtime

    limits = get_runtime().settings.limits
    return limits.request_deadline_s + limits.deadline_margin_s


def _problem(status: int, title: str, detail: str, slug: str | None = None,
             headers: dict[str, str] | None = None) -> dict[str, Any]:
    from agent_memory.http.api import problem_body

    slug = slug or ("not-found" if status == 404 else "invalid-request")
    return {"statusCode": status, "headers": {"Content-Type": "application/problem+json", **(headers or {})},
            "body": json.dumps(problem_body(status, title, detail, slug)), "isBase64Encoded": False}
