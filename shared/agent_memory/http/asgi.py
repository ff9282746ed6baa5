"""The local server's ASGI application: HTTP in, API Gateway v2 events out.

uvicorn owns the protocol (keep-alive, chunked request bodies, framing); this app owns
what API Gateway would do in front of a function: read the body (bounded: 413 past the
cap, read incrementally, a read that stalls gets 408 after ``body_timeout_s`` instead of
holding anything forever), answer OPTIONS and HEAD, call the function's handler on a
thread pool (handlers are synchronous, as in Lambda), and write its response, streaming
SSE frames as the handler produces them.

A watchdog gives a request that outlives its deadline (plus a grace for the handler's own
timeouts to fire first) a 503 problem document; its thread cannot be stopped, but the
client is not left waiting and the handler's ``finally`` still releases its in-flight slot.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent_memory.http.gateway import LocalGateway, _problem

log = logging.getLogger("agent_memory.http.local_server")

WATCHDOG_GRACE_S = 2.0
_END = object()


class AsgiGateway:
    def __init__(self, gateway: LocalGateway, *, max_body_bytes: int, body_timeout_s: float,
                 request_deadline_s: float, threads: int):
        self.gateway = gateway
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.request_deadline_s = request_deadline_s
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="handler")

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        method = scope["method"]
        path = scope.get("raw_path", b"").decode("latin-1").split("?", 1)[0] or scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", []):
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]},{value}" if name in headers else value  # as API Gateway joins
        if method == "OPTIONS":
            await self._options(send, path)
            return
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._send(send, _problem(413, "Payload too large", f"body over {self.max_body_bytes} bytes",
                                            "payload-too-large"), close=True)
            return
        body = await self._read_body(receive, send)
        if body is None:
            return
        invoke_method = "GET" if method == "HEAD" else method
        target = f"{path}?{query}" if query else path
        holder = [body]  # the worker takes the only reference (one copy of the body in memory)
        del body
        client = scope.get("client") or ("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        call = loop.run_in_executor(self.pool, self._invoke, invoke_method, target, headers, holder, client[0])
        try:
            response = await asyncio.wait_for(call, timeout=self.request_deadline_s + WATCHDOG_GRACE_S)
        except TimeoutError:
            log.error("%s %s outlived its %.1f s deadline; answering 503", method, path, self.request_deadline_s)
            response = _problem(503, "Request deadline exceeded", "the request ran past its deadline",
                                "deadline-exceeded", headers={"Retry-After": "1"})
        await self._send(send, response, head=method == "HEAD")

    def _invoke(self, method: str, target: str, headers: dict[str, str], holder: list[bytearray],
                source_ip: str) -> dict[str, Any]:
        try:
            return self.gateway.invoke(method, target, headers, holder.pop(), source_ip)
        except Exception:  # a handler crash must not kill the server
            log.exception("handler failed")
            return _problem(500, "Internal error", "the function raised", "internal")

    async def _read_body(self, receive: Any, send: Any) -> bytearray | None:
        """The request body, or ``None`` once an error response has been sent (or the client left)."""
        body = bytearray()
        while True:
            try:
                message = await asyncio.wait_for(receive(), timeout=self.body_timeout_s)
            except TimeoutError:
                await self._send(send, _problem(408, "Request timeout",
                                                f"the request body did not arrive within {self.body_timeout_s:g} s",
                                                "request-timeout"), close=True)
                return None
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                await self._send(send, _problem(413, "Payload too large", f"body over {self.max_body_bytes} bytes",
                                                "payload-too-large"), close=True)
                return None
            if not message.get("more_body"):
                return body

    async def _options(self, send: Any, path: str) -> None:
        allow = self.gateway.allow_header(path)
        if allow is None:
            await self._send(send, _problem(404, "Not found", f"no route for {path}"))
            return
        await send({"type": "http.response.start", "status": 204,
                    "headers": [(b"allow", allow.encode()), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    async def _send(self, send: Any, response: dict[str, Any], *, head: bool = False, close: bool = False) -> None:
        status = int(response.get("statusCode", 200))
        headers: list[tuple[bytes, bytes]] = []
        for name, value in (response.get("headers") or {}).items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                headers.append((name.lower().encode(), str(value).encode("latin-1")))
        for name, values in (response.get("multiValueHeaders") or {}).items():
            headers.extend((name.lower().encode(), str(v).encode("latin-1")) for v in values)
        headers.extend((b"set-cookie", c.encode("latin-1")) for c in response.get("cookies") or [])
        if close:  # the rest of an unread body is still on the connection
            headers.append((b"connection", b"close"))
        stream = response.get("stream")  # an iterator of text chunks (SSE), local extension
        if stream is not None:
            await self._send_stream(send, status, headers, stream, head=head)
            return
        payload = response.get("body") or ""
        data = base64.b64decode(payload) if response.get("isBase64Encoded") else str(payload).encode()
        headers.append((b"content-length", str(len(data)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else data})

    async def _send_stream(self, send: Any, status: int, headers: list[tuple[bytes, bytes]], stream: Any, *,
                           head: bool) -> None:
        """Each chunk is produced on the pool (it may wait on a model) and written as it comes
        (no Content-Length: uvicorn frames it chunked). The iterator is always closed, which
        releases what it holds (the in-flight slot) even when the client went away."""
        loop = asyncio.get_running_loop()
        iterator = iter(stream)
        try:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            while not head:
                chunk = await loop.run_in_executor(self.pool, next, iterator, _END)
                if chunk is _END:
                    break
                raw = chunk.encode() if isinstance(chunk, str) else chunk
                if raw:
                    await send({"type": "http.response.body", "body": raw, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                await loop.run_in_executor(self.pool, close)

