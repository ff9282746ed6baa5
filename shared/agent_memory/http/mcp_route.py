"""``POST /api/v1/{context_id}/mcp``: MCP as a route of the API, with the caller's own key.

The MCP SDK's streamable-HTTP transport answers each POST on its own: stateless (no session
outlives the request, since Lambda has no affinity) and in JSON-response mode (one buffered
JSON-RPC reply, which API Gateway can carry; MCP allows it in place of an SSE stream). The
tools are ``interfaces.mcp.tools``' table, the one the stdio server serves.

Each tool call is a request to the API's own REST route carrying the headers of the MCP
request that say who calls (its key, partition and delegation), so a tool sees exactly what
the key sees over REST: the same resolution, grants, regions and audit, with nothing
decided here. Where the gateway runs in-process (the local server hands handlers an
``invoke_api``), the call goes through it; on AWS it goes to the domain API Gateway says the
request came in on (``requestContext.domainName``, set by API Gateway, never by the caller), or
to ``settings.api_url`` where one is configured (a custom domain with a base path).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from agent_memory.access import grants
from agent_memory.access.request_context import PARTITION_HEADER

#: The headers that say who calls: what a tool's REST request carries from the MCP request.
CALLER_HEADERS = ("authorization", PARTITION_HEADER, grants.ON_BEHALF_OF_HEADER)

# (method, target, headers, body) -> a Lambda proxy response, as LocalGateway.invoke answers.
InvokeApi = Callable[[str, str, dict[str, str], bytes], dict[str, Any]]


def _transport(invoke_api: InvokeApi | None, domain: str | None, caller: dict[str, str]) -> tuple[str, Any]:
    """(base URL, httpx transport) the tools' SDK client calls the API through. httpx is
    imported here, not with the module: the state function's other routes never need it."""
    import anyio
    import httpx

    class CallerHeaders(httpx.AsyncBaseTransport):
        """Puts the MCP caller's identity headers on every request the tools make (and none
        of the SDK client's own: it has no key here)."""

        def __init__(self, inner: httpx.AsyncBaseTransport):
            self.inner = inner

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            request.headers.pop("authorization", None)
            request.headers.update(caller)
            return await self.inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    class InProcess(httpx.AsyncBaseTransport):
        """A request to the in-process gateway, on a worker thread (a handler blocks, and
        some run an event loop of their own)."""

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            assert invoke_api is not None
            body = await request.aread()
            headers = {k.lower(): v for k, v in request.headers.items()}
            answer = await anyio.to_thread.run_sync(invoke_api, request.method,
                                                    request.url.raw_path.decode("ascii"), headers, body)
            payload = "".join(answer["stream"]) if answer.get("stream") is not None else answer.get("body")
            data = base64.b64decode(payload or "") if answer.get("isBase64Encoded") else str(payload or "").encode()
            return httpx.Response(int(answer.get("statusCode", 200)), headers=answer.get("headers") or {},
                                  content=data, request=request)

    if invoke_api is not None:
        return "http://api.in-process", CallerHeaders(InProcess())
    from agent_memory.runtime import get_runtime

    return get_runtime().settings.api_url or f"https://{domain}", CallerHeaders(httpx.AsyncHTTPTransport())


def caller_headers(event_headers: dict[str, str]) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in (event_headers or {}).items()}
    return {name: lowered[name] for name in CALLER_HEADERS if lowered.get(name)}


def _with_accept(headers: dict[str, str]) -> dict[str, str]:
    """The request's headers, lower-cased, with an Accept the SDK's transport takes. HTTP reads a
    missing Accept, or a wildcard, as admitting any type (RFC 9110, 12.5.1), but the SDK wants
    application/json and text/event-stream named; an Accept that names other types only is left
    as sent, so it still gets the documented 406."""
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    ranges = [r.split(";")[0].strip().lower() for r in lowered.get("accept", "").split(",")]
    if not any(ranges) or any(r in ("*/*", "application/*") for r in ranges):
        lowered["accept"] = "application/json, text/event-stream"
    return lowered


def _check_message(body: bytes) -> None:
    """What the MCP SDK gets wrong, refused first as 400s: a body that is not UTF-8 (the SDK
    fails decoding it and answers 500) and a JSON-RPC message whose ``method`` is empty
    (openapi.yaml states ``minLength: 1``; the SDK accepts it as a notification of nothing,
    202), and one whose ``id`` is neither a string nor an integer. Everything else about the message is the SDK's to judge."""
    import json

    from agent_memory.kernel.errors import InvalidRequest

    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest("request body is not valid UTF-8 (JSON-RPC is JSON)", field="body") from exc
    try:
        message = json.loads(text)
    except ValueError:
        return
    if isinstance(message, dict) and message.get("method") == "":
        raise InvalidRequest("method: a JSON-RPC method name is not empty", field="method")
    # JSON-RPC's id is a string or a number; the SDK takes a message with any other id as a
    # notification (202) and drops it unanswered.
    if isinstance(message, dict) and "id" in message and (
            isinstance(message["id"], bool) or not isinstance(message["id"], (str, int))):
        raise InvalidRequest("id: a JSON-RPC id is a string or an integer", field="id")


def answer(context_id: str, method: str, path: str, headers: dict[str, str], body: bytes, *,
           invoke_api: InvokeApi | None, domain: str | None) -> tuple[int, dict[str, str], bytes]:
    """One MCP request, answered: (status, headers, body)."""
    import anyio

    _check_message(body)

    from agent_memory.kernel import deadline

    base_url, transport = _transport(invoke_api, domain, caller_headers(headers))
    # A tool's request must end inside this one's deadline (it holds the same key and slot).
    left = deadline.remaining()
    timeout = max(1.0, left) if left is not None else 29.0
    return anyio.run(_answer, context_id, method, path, headers, body, base_url, transport, timeout)


async def _answer(context_id: str, method: str, path: str, headers: dict[str, str], body: bytes, base_url: str,
                  transport: Any, timeout: float) -> tuple[int, dict[str, str], bytes]:
    import anyio
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from agent_memory.client import AsyncAgentMemory
    from agent_memory.interfaces.mcp.server import build_server

    # max_retries=0: a 503 the API sheds with goes back to the MCP client, which may retry
    # the whole call, instead of being waited out inside this request's deadline.
    async with AsyncAgentMemory(context_id, base_url=base_url, http_transport=transport, max_retries=0,
                                timeout=timeout) as memory:
        manager = StreamableHTTPSessionManager(app=build_server(memory), json_response=True, stateless=True)
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            await anyio.sleep_forever()  # the client is there until the reply is written
            raise AssertionError("unreachable")

        status, out_headers, chunks = 500, {}, []

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                for name, value in message.get("headers", []):
                    out_headers[name.decode("latin-1")] = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        scope = {"type": "http", "http_version": "1.1", "method": method, "scheme": "https", "path": path,
                 "raw_path": path.encode(), "query_string": b"", "root_path": "",
                 "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in _with_accept(headers).items()],
                 "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 443)}
        async with manager.run():
            await manager.handle_request(scope, receive, send)
    out_headers.pop("content-length", None)
    return status, out_headers, b"".join(chunks)
