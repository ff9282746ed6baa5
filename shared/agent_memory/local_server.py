"""Local server: the deployed API on one machine, no Docker, no AWS account.

It reads template.yaml (which function serves which route) and openapi.yaml (the routes
that exist), turns each HTTP request into an API Gateway HTTP API payload 2.0 event, calls
that function's ``lambda_handler`` in-process, and writes its response back. Requests are
served concurrently (one thread each), as Lambda would run concurrent instances.
"""

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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from agent_memory.cfn_template import function_routes, load_template, repo_root

log = logging.getLogger("agent_memory.local_server")

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
    spec = yaml.safe_load((root / "openapi.yaml").read_text(encoding="utf-8"))
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


class LambdaContext:
    """The attributes Powertools and our handlers read from a Lambda context."""

    def __init__(self, function_name: str):
        self.function_name = function_name
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
        return 29_000


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

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            if route.method != method:
                continue
            m = route.pattern.match(path)
            if m:
                return route, m.groupdict()
        return None

    def invoke(self, method: str, target: str, headers: dict[str, str], body: bytes,
               source_ip: str = "127.0.0.1") -> dict[str, Any]:
        parts = urlsplit(target)
        found = self.match(method, parts.path)
        if found is None:
            return _problem(404, "Not found", f"no route for {method} {parts.path}")
        route, params = found
        event = build_event(route, method, parts.path, parts.query, headers, body, params, source_ip)
        handler = self.handlers.get(route.handler)
        return handler(event, LambdaContext(route.handler.split("/")[1]))


def _problem(status: int, title: str, detail: str) -> dict[str, Any]:
    from agent_memory.http import problem_body

    slug = "not-found" if status == 404 else "invalid-request"
    return {"statusCode": status, "headers": {"Content-Type": "application/problem+json"},
            "body": json.dumps(problem_body(status, title, detail, slug)), "isBase64Encoded": False}


def make_handler(gateway: LocalGateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "agent-memory-local"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._write(_problem(413, "Payload too large", f"body over {MAX_BODY_BYTES} bytes"))
                self.close_connection = True
                return
            body = self.rfile.read(length) if length else b""
            try:
                response = gateway.invoke(self.command, self.path, dict(self.headers.items()), body,
                                          self.client_address[0])
            except Exception:  # a handler crash must not kill the server
                log.exception("handler failed")
                response = _problem(500, "Internal error", "the function raised")
            self._write(response)

        def _write(self, response: dict[str, Any]) -> None:
            status = int(response.get("statusCode", 200))
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            multi = response.get("multiValueHeaders") or {}
            payload = response.get("body") or ""
            stream = response.get("stream")  # an iterator of text chunks (SSE), local extension
            data = base64.b64decode(payload) if response.get("isBase64Encoded") else str(payload).encode()
            self.send_response(status)
            for k, v in headers.items():
                if k not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(k, v)
            for k, values in multi.items():
                for v in values:
                    self.send_header(k, v)
            for cookie in response.get("cookies") or []:
                self.send_header("set-cookie", cookie)
            if stream is not None:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in stream:
                    raw = chunk.encode() if isinstance(chunk, str) else chunk
                    if raw:
                        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                return
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        def log_message(self, fmt: str, *args: Any) -> None:
            log.info("%s %s", self.address_string(), fmt % args)

    return Handler


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(host: str = "127.0.0.1", port: int = 8080, root: Path | None = None) -> LocalServer:
    gateway = LocalGateway(root)
    return LocalServer((host, port), make_handler(gateway))
