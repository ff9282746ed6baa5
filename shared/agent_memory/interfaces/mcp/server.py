"""The MCP server for one context (the ``mcp`` SDK's low-level API): the tool table, tool errors
as ``isError`` results carrying the problem document, and the state and entity resources."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote

import pydantic

from agent_memory.client import AgentMemoryError, ApiError, AsyncAgentMemory
from agent_memory.interfaces.mcp.render import jsonable, result_text
from agent_memory.interfaces.mcp.tools import TOOLS, ToolInputError
from agent_memory.kernel.errors import InvalidRequest

SERVER_NAME = "agent-memory"
URI_SCHEME = "agent-memory"
JSON = "application/json"


def _error_result(types: Any, text: str, problem: dict[str, Any] | None = None) -> Any:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True,
                                structuredContent={"problem": problem} if problem is not None else None)


def _validation_text(tool: str, exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg')}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def state_uri(context: str) -> str:
    return f"{URI_SCHEME}://{quote(context, safe='')}/state"


def entity_uri(context: str, type_: str, name: str) -> str:
    return f"{URI_SCHEME}://{quote(context, safe='')}/entities/{quote(type_, safe='')}/{quote(name, safe='')}"


def parse_uri(uri: str) -> tuple[str, list[str]]:
    """(context, path segments) of an ``agent-memory://`` URI."""
    prefix = f"{URI_SCHEME}://"
    if not uri.startswith(prefix):
        raise ValueError(f"not an {URI_SCHEME} resource: {uri}")
    context, _, path = uri[len(prefix):].partition("/")
    return unquote(context), [unquote(p) for p in path.split("/")] if path else []


def build_server(memory: AsyncAgentMemory) -> Any:
    """The MCP server (low-level API of the ``mcp`` SDK 1.x) for one context of the service."""
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.lowlevel.helper_types import ReadResourceContents

    from agent_memory import __version__

    # our version, not the MCP SDK's (the SDK's default when none is given)
    server: Server = Server(SERVER_NAME, version=__version__, instructions=(
        f"Long-term memory of context {memory.context_id!r}: remember statements, recall facts, read the "
        "current state and an attribute's history, chat with memory, append to and read shared threads."))
    by_name = {t.name: t for t in TOOLS}
    context = memory.context_id

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name=t.name, description=t.description, inputSchema=t.input_schema()) for t in TOOLS]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        spec = by_name.get(name)
        if spec is None:
            return _error_result(types, f"unknown tool {name!r}")
        try:
            parsed = spec.parse(arguments)
            result = jsonable(await spec.run(memory, parsed))
        except pydantic.ValidationError as exc:
            return _error_result(types, _validation_text(name, exc))
        except (InvalidRequest, ToolInputError) as exc:
            return _error_result(types, f"invalid arguments for {name}: {exc}")
        except ApiError as exc:
            problem = {**exc.problem, "status": exc.status}
            return _error_result(types, f"{exc.status} {exc.title}: {exc.detail}", problem)
        except AgentMemoryError as exc:
            return _error_result(types, f"agent-memory service unavailable: {exc}")
        return [types.TextContent(type="text", text=result_text(name, result))], result

    @server.list_resources()
    async def list_resources() -> list[types.Resource]:
        return [types.Resource(uri=state_uri(context), name="state", title=f"Memory state of {context}",
                               description="What the agent believes now, by category", mimeType=JSON)]

    @server.list_resource_templates()
    async def list_resource_templates() -> list[types.ResourceTemplate]:
        return [
            types.ResourceTemplate(uriTemplate=f"{URI_SCHEME}://{{context}}/state", name="state",
                                   description="A context's memory state, by category", mimeType=JSON),
            types.ResourceTemplate(uriTemplate=f"{URI_SCHEME}://{{context}}/entities/{{type}}/{{name}}",
                                   name="entity", description="An entity's current attributes and relations",
                                   mimeType=JSON),
        ]

    @server.read_resource()
    async def read_resource(uri: Any) -> Iterable[ReadResourceContents]:
        ctx, path = parse_uri(str(uri))
        if ctx != context:
            raise ValueError(f"this server serves context {context!r}, not {ctx!r}")
        try:
            if path == ["state"]:
                value: Any = await memory.state()
            elif len(path) == 3 and path[0] == "entities":
                value = await memory.entities.get(path[1], path[2])
            else:
                raise ValueError(f"no such resource: {uri}")
        except ApiError as exc:
            raise ValueError(f"{exc.status} {exc.title}: {exc.detail}") from exc
        return [ReadResourceContents(content=json.dumps(jsonable(value), ensure_ascii=False), mime_type=JSON)]

    return server
