"""The MCP server's transports: stdio (an MCP host starts the process) and streamable HTTP."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from agent_memory.client import AsyncAgentMemory
from agent_memory.interfaces.mcp.server import build_server

log = logging.getLogger(__name__)


def _client(args: argparse.Namespace) -> AsyncAgentMemory:
    return AsyncAgentMemory(args.context, base_url=args.url, api_key=args.api_key, partition=args.partition,
                            on_behalf_of=args.on_behalf_of, timeout=120)


async def serve_stdio(args: argparse.Namespace) -> None:
    from mcp.server.stdio import stdio_server

    async with _client(args) as memory:
        server = build_server(memory)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def http_app(memory: AsyncAgentMemory, host: str, path: str = "/mcp") -> Any:
    """A Starlette app serving the MCP endpoint at ``path`` (streamable HTTP), with the SDK's
    DNS-rebinding protection when bound to loopback."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    from agent_memory.interfaces.netaddr import is_loopback

    security = None
    if is_loopback(host):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    manager = StreamableHTTPSessionManager(app=build_server(memory), security_settings=security)

    class _Endpoint:  # an ASGI app: Starlette routes to a class instance as one
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    return Starlette(routes=[Route(path, endpoint=_Endpoint())], lifespan=lambda app: manager.run())


async def serve_http(args: argparse.Namespace) -> None:
    import uvicorn

    async with _client(args) as memory:
        app = http_app(memory, args.host, args.path)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", lifespan="on")
        server = uvicorn.Server(config)
        log.info("agent-memory MCP server on http://%s:%d%s (context %s, service %s)", args.host, args.port,
                 args.path, args.context, args.url or "AGENT_MEMORY_URL")
        await server.serve()
