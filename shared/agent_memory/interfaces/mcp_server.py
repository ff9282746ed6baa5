"""``agent-memory mcp``: the service as an MCP server, over stdio or streamable HTTP.

It is a client of the API like any other: every tool and resource calls the service through
the async SDK (``AsyncAgentMemory``) with the API's own auth (``--api-key`` or
``AGENT_MEMORY_API_KEY``), so a key sees through MCP exactly what it sees over HTTP.

Tools take JSON objects whose schemas come from the service's request models
(``agent_memory.models``): ``remember`` is ``WriteFactsRequest``, ``recall`` is
``QueryRequest`` and so on, less the fields a tool does not offer. Arguments are validated
by the same models before anything is sent. An error response comes back as an MCP tool
error (``isError``) carrying the problem document's status and detail.

Resources: ``agent-memory://{context}/state`` (the context's state) and
``agent-memory://{context}/entities/{type}/{name}`` (an entity's current record).

Needs the ``mcp`` extra: ``pip install 'agent-memory[mcp]'``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_memory.client import AgentMemoryError, ApiError, AsyncAgentMemory
from agent_memory.client._calls import fact_collection
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.care import ConsolidateRequest, FsckRequest, ReflectRequest
from agent_memory.models.reads import ForgetRequest
from agent_memory.models.requests import ChatRequest, WriteFactsRequest, rfc3339
from agent_memory.models.retrieval import ContextRequest, QueryRequest
from agent_memory.models.threads import AppendThreadTurnRequest, ThreadContextRequest
from agent_memory.models.wire_base import WireModel

log = logging.getLogger(__name__)

SERVER_NAME = "agent-memory"
URI_SCHEME = "agent-memory"
JSON = "application/json"


# --- tool inputs the HTTP API takes as path or query parameters -------------------------


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StateInput(_Input):
    """GET /state: the current snapshot, by category."""

    limit: int | None = Field(default=None, ge=1, le=1000, description="rows per table (service default 100)")


class EntityInput(_Input):
    """GET /entities/{type}/{name}: an entity's current attributes and relations."""

    type: str = Field(min_length=1, max_length=256, description="entity type, e.g. person")
    name: str = Field(min_length=1, max_length=256, description="entity name, e.g. user")
    as_of: str | None = Field(default=None, description="read the record as it was at this RFC 3339 instant")
    limit: int | None = Field(default=None, ge=1, le=1000, description="rows per list")

    _as_of = field_validator("as_of")(classmethod(lambda cls, v: rfc3339(v)))


class HistoryInput(_Input):
    """GET /entities/{type}/{name}/attributes/{key}/history: one attribute's supersession chain."""

    type: str = Field(min_length=1, max_length=256, description="entity type, e.g. person")
    name: str = Field(min_length=1, max_length=256, description="entity name, e.g. user")
    key: str = Field(min_length=1, max_length=256, description="attribute key, e.g. location")


_FACT_ID = Field(min_length=5, max_length=128, pattern=r"^(attr|rel|act|instr)_[A-Za-z0-9]+$",
                 description="the fact's id (attr_..., rel_..., act_... or instr_...), as recall, state and "
                             "remember report it")


class FactInput(_Input):
    """DELETE /{attributes|relations|actions|instructions}/{id}: forget one fact."""

    id: str = _FACT_ID
    purge: bool = Field(default=False, description="also hard-delete its superseded history")


class CorrectFactInput(_Input):
    """PATCH /{attributes|relations}/{id}: correct one fact (its history is kept)."""

    id: str = Field(min_length=5, max_length=128, pattern=r"^(attr|rel)_[A-Za-z0-9]+$",
                    description="the attribute's or relation's id (attr_... or rel_...)")
    value: str = Field(min_length=1, max_length=4096,
                       description="the correct value (a relation: its object, e.g. person/erin)")
    note: str | None = Field(default=None, max_length=4096, description="why it was wrong, kept with the change")


class ThreadAppendInput(AppendThreadTurnRequest):
    thread_id: str = Field(min_length=1, max_length=256, description="the thread to append to")


class ThreadContextInput(ThreadContextRequest):
    thread_id: str = Field(min_length=1, max_length=256, description="the thread to read")


# --- the tools -------------------------------------------------------------------------


Run = Callable[[AsyncAgentMemory, Any], Awaitable[Any]]


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: its input is ``model`` (a request model of the service) less ``hidden``."""

    name: str
    description: str
    model: type[BaseModel]
    run: Run
    hidden: tuple[str, ...] = ()

    def input_schema(self) -> dict[str, Any]:
        """The model's JSON schema (field names as the SDK spells them), without the hidden
        fields; ``additionalProperties: false`` then refuses them."""
        schema = self.model.model_json_schema(by_alias=False)
        properties = schema.get("properties", {})
        for name in self.hidden:
            properties.pop(name, None)
        if "required" in schema:
            schema["required"] = [n for n in schema["required"] if n in properties]
        schema["additionalProperties"] = False
        schema.pop("title", None)
        schema.pop("description", None)  # the model's docstring; the tool has its own
        return _prune_defs(schema)

    def parse(self, arguments: dict[str, Any]) -> BaseModel:
        hidden = sorted(set(arguments) & set(self.hidden))
        if hidden:
            raise ToolInputError(f"{', '.join(hidden)}: not an argument of {self.name}")
        return self.model.model_validate(arguments)


class ToolInputError(Exception):
    pass


def _prune_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """Drops the ``$defs`` only hidden fields referred to."""
    defs = schema.get("$defs")
    if not defs:
        return schema
    keep: set[str] = set()
    todo = [{k: v for k, v in schema.items() if k != "$defs"}]
    while todo:
        for name in re.findall(r'"#/\$defs/([^"]+)"', json.dumps(todo.pop())):
            if name not in keep and name in defs:
                keep.add(name)
                todo.append(defs[name])
    if keep:
        schema["$defs"] = {k: v for k, v in defs.items() if k in keep}
    else:
        del schema["$defs"]
    return schema


async def _remember(m: AsyncAgentMemory, a: WriteFactsRequest) -> Any:
    return await m.remember(a.text, session_id=a.session_id, infer=a.infer, scopes=a.scopes or None,
                            labels=a.labels or None, memory_category=a.memory_category, role=a.role,
                            observed_at=a.observed_at)


def _filters(a: QueryRequest | ContextRequest) -> dict[str, Any]:
    """The recall filters of a tool call, as the SDK's keyword arguments."""
    return {"include": a.include, "as_of": a.as_of, "session_id": a.session_id, "labels": a.labels,
            "at_instant": a.at_instant, "valid_from": a.valid_from, "valid_until": a.valid_until, "lens": a.lens,
            "scope_view": a.scope_view, "source": a.source,
            "location": a.location.model_dump(by_alias=True, exclude_none=True) if a.location else None}


async def _recall(m: AsyncAgentMemory, a: QueryRequest) -> Any:
    return await m.query(a.query, k=a.k, mode=a.mode, **_filters(a))


async def _get_context(m: AsyncAgentMemory, a: ContextRequest) -> Any:
    return await m.context(a.query, k=a.k, subject=a.subject, **_filters(a))


async def _chat(m: AsyncAgentMemory, a: ChatRequest) -> Any:
    return await m.chat(a.message, session_id=a.session_id, scopes=a.scopes or None, labels=a.labels or None,
                        model=a.model, suppress_markers=a.suppress_markers or None)


async def _state(m: AsyncAgentMemory, a: StateInput) -> Any:
    return await m.state(limit=a.limit)


async def _entity(m: AsyncAgentMemory, a: EntityInput) -> Any:
    return await m.entities.get(a.type, a.name, as_of=a.as_of, limit=a.limit)


async def _history(m: AsyncAgentMemory, a: HistoryInput) -> Any:
    return {"history": await m.entities.history(a.type, a.name, a.key)}


async def _forget(m: AsyncAgentMemory, a: ForgetRequest) -> Any:
    return await m.forget(a.query, limit=a.limit, min_score=a.min_score, dry_run=a.dry_run, purge=a.purge)


async def _delete_fact(m: AsyncAgentMemory, a: FactInput) -> Any:
    return await getattr(m, fact_collection(a.id)).delete(a.id, purge=a.purge or None)


async def _correct_fact(m: AsyncAgentMemory, a: CorrectFactInput) -> Any:
    return await getattr(m, fact_collection(a.id)).update(a.id, a.value, note=a.note)


async def _reflect(m: AsyncAgentMemory, a: ReflectRequest) -> Any:
    return await m.reflect(a.query, persist=a.persist)


async def _consolidate(m: AsyncAgentMemory, a: ConsolidateRequest) -> Any:
    return await m.consolidate(dry_run=a.dry_run, fact_limit=a.fact_limit, observation_limit=a.observation_limit)


async def _fsck(m: AsyncAgentMemory, a: FsckRequest) -> Any:
    return await m.fsck(check=a.check, duplicate_threshold=a.duplicate_threshold, max_results=a.max_results)


async def _thread_append(m: AsyncAgentMemory, a: ThreadAppendInput) -> Any:
    a.check()
    return await m.append_thread(a.thread_id, a.text, entity_id=a.entity_id, metadata=a.metadata,
                                 acl_readers=a.acl_readers, idempotency_key=a.idempotency_key)


async def _thread_context(m: AsyncAgentMemory, a: ThreadContextInput) -> Any:
    a.check()
    return {"items": await m.thread_context(a.thread_id, a.query, last_n_turns=a.last_n_turns,
                                            recent_first=a.recent_first, entity_id=a.entity_id)}


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("remember", "Store a statement in memory (one user turn) and return the facts extracted from it: "
             "attributes, relations, actions, instructions, corrections of earlier facts.",
             WriteFactsRequest, _remember, hidden=("triples", "speaker")),
    ToolSpec("recall", "Ranked memory for a query: facts, turns and document chunks with scores "
             "(as_of reads facts valid at an instant).", QueryRequest, _recall),
    ToolSpec("get_context", "Retrieved memory for a query formatted for a prompt, with numbered sources.",
             ContextRequest, _get_context),
    ToolSpec("chat", "One chat turn with the memory-backed assistant: the reply, its citations and the "
             "memory it updated.", ChatRequest, _chat, hidden=("stream", "bypass_cache")),
    ToolSpec("state", "What the agent believes now: entities, attributes, relations and actions by category, "
             "instructions and open uncertainties.", StateInput, _state),
    ToolSpec("entity", "One entity's current record: its attributes and relations (as_of: at an instant).",
             EntityInput, _entity),
    ToolSpec("history", "One attribute's history: each value with its validity window, oldest first.",
             HistoryInput, _history),
    ToolSpec("forget", "Delete the memory matching a query (dry_run: only list what would go).",
             ForgetRequest, _forget),
    ToolSpec("correct_fact", "Correct one remembered fact by its id when the user says it is wrong: the new "
             "value replaces it, the old one stays as history, and the correction is returned.",
             CorrectFactInput, _correct_fact),
    ToolSpec("delete_fact", "Forget one remembered fact by its id (from recall, state or remember).",
             FactInput, _delete_fact),
    ToolSpec("reflect", "What memory holds on a topic, synthesised, with the ids of its evidence (persist: "
             "store its conclusions as facts).", ReflectRequest, _reflect),
    ToolSpec("consolidate", "Turn facts stated again and again into observations with a proof count "
             "(dry_run: only report).", ConsolidateRequest, _consolidate),
    ToolSpec("fsck", "Check memory for contradictions, near-duplicates and text that tries to steer a model "
             "(read-only).", FsckRequest, _fsck),
    ToolSpec("thread_append", "Append a turn to a thread (shared, ordered agent conversation log).",
             ThreadAppendInput, _thread_append),
    ToolSpec("thread_context", "A thread's latest turns and older turns matching a query, as one list.",
             ThreadContextInput, _thread_context),
)


def _jsonable(value: Any) -> Any:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _error_result(types: Any, text: str, problem: dict[str, Any] | None = None) -> Any:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True,
                                structuredContent={"problem": problem} if problem is not None else None)


def _validation_text(tool: str, exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg')}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


# --- resources ---------------------------------------------------------------------------


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


# --- the server --------------------------------------------------------------------------


def build_server(memory: AsyncAgentMemory) -> Any:
    """The MCP server (low-level API of the ``mcp`` SDK 1.x) for one context of the service."""
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.lowlevel.helper_types import ReadResourceContents

    server: Server = Server(SERVER_NAME, instructions=(
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
            result = _jsonable(await spec.run(memory, parsed))
        except pydantic.ValidationError as exc:
            return _error_result(types, _validation_text(name, exc))
        except (InvalidRequest, ToolInputError) as exc:
            return _error_result(types, f"invalid arguments for {name}: {exc}")
        except ApiError as exc:
            problem = {**exc.problem, "status": exc.status}
            return _error_result(types, f"{exc.status} {exc.title}: {exc.detail}", problem)
        except AgentMemoryError as exc:
            return _error_result(types, f"agent-memory service unavailable: {exc}")
        return [types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))], result

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
        return [ReadResourceContents(content=json.dumps(_jsonable(value), ensure_ascii=False), mime_type=JSON)]

    return server


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


def registration(context: str, url: str | None = None, api_key: str | None = None) -> dict[str, Any]:
    """The ``mcpServers`` block that starts this installation's MCP server over stdio: the
    ``agent-memory`` script beside this interpreter by its absolute path (a host does not
    search a venv's bin/), or this interpreter running the CLI module when there is none."""
    from pathlib import Path

    python = Path(sys.executable).absolute()
    script = python.with_name("agent-memory")
    args = ["mcp", "--context", context]
    if script.is_file():
        entry: dict[str, Any] = {"command": str(script), "args": args}
    else:
        entry = {"command": str(python), "args": ["-m", "agent_memory.interfaces.cli", *args]}
    env = {"AGENT_MEMORY_URL": url or os.environ.get("AGENT_MEMORY_URL") or "http://127.0.0.1:8080"}
    key = api_key or os.environ.get("AGENT_MEMORY_API_KEY")
    if key:
        env["AGENT_MEMORY_API_KEY"] = key
    entry["env"] = env
    return {"mcpServers": {SERVER_NAME: entry}}


def _print_registration(args: argparse.Namespace) -> int:
    print(json.dumps(registration(args.context, args.url, args.api_key), indent=2))
    return 0


def add_command(sub: Any) -> None:
    config = sub.add_parser(
        "mcp-config", help="print the mcpServers block that registers this installation's MCP server in a host",
        description="Print the JSON block an MCP host (Claude Desktop, an IDE agent) needs to start "
                    "`agent-memory mcp` over stdio, with this installation's command by its absolute path.")
    config.add_argument("--context", required=True, help="the context the tools read and write, e.g. acme")
    config.add_argument("--url", default=None,
                        help="service URL the server calls (AGENT_MEMORY_URL, default http://127.0.0.1:8080)")
    config.add_argument("--api-key", default=None,
                        help="bearer key to put in the block (AGENT_MEMORY_API_KEY; omitted when unset)")
    config.set_defaults(func=_print_registration)

    mcp = sub.add_parser("mcp", help="serve memory to MCP hosts (stdio or streamable HTTP), through the SDK")
    mcp.add_argument("--context", required=True, help="the context the tools read and write")
    mcp.add_argument("--url", default=None, help="service URL (AGENT_MEMORY_URL, default http://127.0.0.1:8080)")
    mcp.add_argument("--api-key", default=None, help="bearer key (AGENT_MEMORY_API_KEY)")
    mcp.add_argument("--partition", default=None)
    mcp.add_argument("--on-behalf-of", default=None, dest="on_behalf_of",
                     help="act for this principal (the key needs 'delegate')")
    mcp.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                     help="stdio (an MCP host starts the process) or streamable HTTP")
    mcp.add_argument("--host", default="127.0.0.1", help="with --transport http")
    mcp.add_argument("--port", type=int, default=8765, help="with --transport http")
    mcp.add_argument("--path", default="/mcp", help="with --transport http: the endpoint's path")
    mcp.add_argument("--allow-remote", action="store_true",
                     help="with --transport http: bind a non-loopback address (anyone who reaches it acts "
                          "with this server's API key)")
    mcp.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        print("agent-memory: the MCP server needs the mcp extra: `make install` in a checkout, or "
              "pip install 'mcp>=1.25,<2'", file=sys.stderr)
        return 2
    if args.transport == "http":
        from agent_memory.interfaces.netaddr import is_loopback

        if not is_loopback(args.host) and not args.allow_remote:
            print(f"agent-memory: refusing to serve MCP on {args.host}: every caller would act with this "
                  "server's API key; bind a loopback address or pass --allow-remote", file=sys.stderr)
            return 2
        anyio.run(serve_http, args)
    else:
        anyio.run(serve_stdio, args)
    return 0
