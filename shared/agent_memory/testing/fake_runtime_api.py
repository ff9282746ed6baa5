"""A fake of the Lambda Runtime API on loopback, for the runtime loop
(``agent_memory.http.lambda_runtime``) and the built chat function: it hands out queued
invocations on ``GET /2018-06-01/runtime/invocation/next`` and records every response, a
streamed one chunk by chunk with each chunk's arrival (a ``time.monotonic()`` reading and a
sequence number shared with ``note()``, so a test can order a chunk against other events
without timing anything) and its trailers.

    with FakeRuntimeApi() as api:
        request_id = api.invoke(event, deadline_s=29)
        ...  # start the loop with AWS_LAMBDA_RUNTIME_API=api.address
        response = api.response(request_id, timeout_s=60)
        response.prelude, response.body_chunks, response.trailers

``invoke(..., disconnect_after=n)`` resets the response connection after its ``n``-th body
chunk, as Lambda drops the response of a function URL caller that went away.
"""

from __future__ import annotations

import itertools
import json
import queue
import socket
import struct
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DELIMITER = b"\0" * 8


@dataclass
class Chunk:
    data: bytes
    at: float  # time.monotonic() when it was read
    seq: int  # position among every recorded event (chunks and notes)


@dataclass
class Response:
    request_id: str
    mode: str | None = None  # Lambda-Runtime-Function-Response-Mode
    content_type: str | None = None
    transfer_encoding: str | None = None
    status: int | None = None  # what the fake answered
    chunks: list[Chunk] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)
    error: dict[str, Any] | None = None  # a POST …/error
    error_type: str | None = None
    disconnected: bool = False
    body: bytes = b""  # a buffered response's whole body
    taken_at: float | None = None  # time.monotonic() when the loop took the invocation (next)
    received_at: float | None = None  # ... when the whole response had arrived
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def raw(self) -> bytes:
        return b"".join(c.data for c in self.chunks) if self.chunks else self.body

    @property
    def prelude(self) -> dict[str, Any] | None:
        raw = self.raw
        if self.content_type != "application/vnd.awslambda.http-integration-response" or DELIMITER not in raw:
            return None
        return json.loads(raw.split(DELIMITER, 1)[0])

    @property
    def payload(self) -> bytes:
        """The HTTP body the caller sees (after the prelude and its delimiter)."""
        raw = self.raw
        return raw.split(DELIMITER, 1)[1] if self.prelude is not None else raw

    def body_chunks(self) -> list[Chunk]:
        """The chunks written after the one that ended the prelude, each as it came."""
        out, seen = [], b""
        for chunk in self.chunks:
            if DELIMITER in seen:
                out.append(chunk)
            seen += chunk.data
        return out


class FakeRuntimeApi:
    def __init__(self) -> None:
        self._pending: queue.Queue = queue.Queue()
        self.responses: dict[str, Response] = {}
        self.init_errors: list[dict[str, Any]] = []
        self.events: list[tuple[int, float, str]] = []  # (seq, at, what): notes and chunks
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._disconnect: dict[str, int] = {}
        self._on_chunk: dict[str, Any] = {}
        self._on_disconnect: dict[str, Any] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                if not self.path.endswith("/runtime/invocation/next"):
                    self._answer(404, b"{}")
                    return
                item = fake._pending.get()
                if item is None:  # shutting down: the loop's request is left unanswered
                    self.close_connection = True
                    return
                request_id, event, deadline_ms, trace = item
                fake.responses[request_id].taken_at = time.monotonic()
                body = json.dumps(event).encode()
                self.send_response(200)
                self.send_header("Lambda-Runtime-Aws-Request-Id", request_id)
                self.send_header("Lambda-Runtime-Deadline-Ms", str(deadline_ms))
                self.send_header("Lambda-Runtime-Invoked-Function-Arn",
                                 "arn:aws:lambda:us-east-1:123456789012:function:ChatFunction")
                self.send_header("Lambda-Runtime-Trace-Id", trace)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                parts = self.path.split("/")
                if self.path.endswith("/runtime/init/error"):
                    fake.init_errors.append(json.loads(self._read_all() or b"{}"))
                    self._answer(202, b'{"status":"OK"}')
                    return
                request_id, what = parts[-2], parts[-1]
                response = fake.responses.setdefault(request_id, Response(request_id))
                if what == "error":
                    response.error = json.loads(self._read_all() or b"{}")
                    response.error_type = self.headers.get("Lambda-Runtime-Function-Error-Type")
                    self._answer(202, b'{"status":"OK"}')
                    response.done.set()
                    return
                response.mode = self.headers.get("Lambda-Runtime-Function-Response-Mode")
                response.content_type = self.headers.get("Content-Type")
                response.transfer_encoding = self.headers.get("Transfer-Encoding")
                if (response.transfer_encoding or "").lower() == "chunked":
                    if not self._read_chunks(response):
                        # Reset, not a polite close: the loop's very next write fails, as
                        # when Lambda drops the response of a caller that went away.
                        self.close_connection = True
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.rfile.close()  # the socket closes only once its files are closed too
                        self.wfile.close()
                        self.connection.close()
                        response.disconnected = True
                        callback = fake._on_disconnect.get(response.request_id)
                        if callback is not None:
                            callback()
                        response.done.set()
                        return
                else:
                    response.body = self._read_all()
                response.received_at = time.monotonic()
                response.status = 202
                self._answer(202, b'{"status":"OK"}')
                response.done.set()

            def _read_all(self) -> bytes:
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _read_chunks(self, response: Response) -> bool:
                """Reads the chunked body; ``False`` when it hung up on purpose."""
                limit = fake._disconnect.get(response.request_id)
                body_chunks = 0
                seen = b""
                while True:
                    size_line = self.rfile.readline()
                    if not size_line:
                        return True
                    size = int(size_line.split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while True:
                            line = self.rfile.readline().rstrip(b"\r\n")
                            if not line:
                                return True
                            name, _, value = line.decode("latin-1").partition(":")
                            response.trailers[name.strip()] = value.strip()
                    data = self.rfile.read(size)
                    self.rfile.readline()  # the CRLF after the data
                    with fake._lock:
                        chunk = Chunk(data, time.monotonic(), next(fake._seq))
                        response.chunks.append(chunk)
                        fake.events.append((chunk.seq, chunk.at, f"chunk {response.request_id}"))
                    in_body = DELIMITER in seen  # the prelude ended in an earlier chunk
                    seen += data
                    if in_body:
                        body_chunks += 1
                        callback = fake._on_chunk.get(response.request_id)
                        if callback is not None:
                            callback(chunk)
                    if limit is not None and body_chunks >= limit:
                        return False

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a connection the fake reset on purpose

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def invoke(self, event: Any, *, deadline_s: float = 29.0, disconnect_after: int | None = None,
               on_chunk: Any = None, on_disconnect: Any = None) -> str:
        """Queues an invocation; its request id. ``on_chunk(chunk)`` runs (on the server's
        thread) as each body chunk arrives, ``on_disconnect()`` once the fake has reset the
        response connection (``disconnect_after``)."""
        request_id = str(uuid.uuid4())
        self.responses[request_id] = Response(request_id)
        if disconnect_after is not None:
            self._disconnect[request_id] = disconnect_after
        if on_chunk is not None:
            self._on_chunk[request_id] = on_chunk
        if on_disconnect is not None:
            self._on_disconnect[request_id] = on_disconnect
        trace = f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};Parent={uuid.uuid4().hex[:16]};Sampled=0"
        self._pending.put((request_id, event, int((time.time() + deadline_s) * 1000), trace))
        return request_id

    def note(self, what: str) -> int:
        """Records an event of the test's own (its sequence number) among the chunks."""
        with self._lock:
            seq = next(self._seq)
            self.events.append((seq, time.monotonic(), what))
            return seq

    def response(self, request_id: str, timeout_s: float = 60.0) -> Response:
        response = self.responses[request_id]
        if not response.done.wait(timeout_s):
            raise TimeoutError(f"no response to {request_id} within {timeout_s} s")
        return response

    def start(self) -> FakeRuntimeApi:
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-runtime-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        for _ in range(4):
            self._pending.put(None)
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeRuntimeApi:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def function_url_event(method: str, path: str, headers: dict[str, str], body: bytes = b"", query: str = "",
                       url_id: str = "abc123example", region: str = "us-east-1") -> dict[str, Any]:
    """A request through a Lambda function URL as Lambda delivers it (payload 2.0: ``routeKey``
    ``$default``, no path parameters, the URL's own domain)."""
    from urllib.parse import parse_qsl

    params: dict[str, str] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        params[k] = f"{params[k]},{v}" if k in params else v
    now = time.time()
    domain = f"{url_id}.lambda-url.{region}.on.aws"
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
        "headers": {k.lower(): v for k, v in headers.items()} | {"host": domain},
        "queryStringParameters": params or None,
        "requestContext": {
            "accountId": "anonymous", "apiId": url_id, "domainName": domain, "domainPrefix": url_id,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.9",
                     "userAgent": headers.get("user-agent", "")},
            "requestId": str(uuid.uuid4()), "routeKey": "$default", "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)), "timeEpoch": int(now * 1000),
        },
        "body": body.decode("utf-8") if body else None,
        "isBase64Encoded": False,
    }
