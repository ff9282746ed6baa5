"""`agent-memory mcp` driven by the MCP SDK's own client, over stdio and over streamable
HTTP, against the local server: tools (with schemas from the request models), tool errors
carrying the problem document, and resources."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, types  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

from agent_memory.interfaces.mcp.tools import TOOLS  # noqa: E402
from agent_memory.models.retrieval import K_MAX, QueryRequest  # noqa: E402

EXPECTED_TOOLS = {"remember", "recall", "get_context", "chat", "state", "entity", "history", "forget",
                  "correct_fact", "delete_fact", "reflect", "consolidate", "fsck", "thread_append", "thread_context"}


def _env(server: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    return {**env, "AGENT_MEMORY_URL": server, "LOG_LEVEL": "WARNING"}


def run_stdio(server: str, body: Callable[[ClientSession], Awaitable[None]], *args: str) -> None:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "agent_memory.interfaces.cli", "mcp", "--context", "acme", *args],
                                   env=_env(server))

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await body(session)

    anyio.run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_mcp(server: str) -> Iterator[str]:
    """`agent-memory mcp --transport http` as a process; its endpoint URL once it accepts."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "agent_memory.interfaces.cli", "mcp", "--context", "acme",
                             "--transport", "http", "--port", str(port)], env=_env(server))
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, "the MCP server exited"
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_http(url: str, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            await body(session)

    anyio.run(main)


def data(result: types.CallToolResult) -> Any:
    """The structured content (the API's JSON); the text beside it is short readable lines."""
    assert not result.isError, result.content
    text = result.content[0].text
    assert text and not text.lstrip().startswith(("{", "[")), text
    return result.structuredContent


def text(result: types.CallToolResult) -> str:
    assert not result.isError, result.content
    return result.content[0].text


async def remember_then_correct(session: ClientSession) -> None:
    called = await session.call_tool("remember", {"text": "I live in London."})
    first = data(called)
    attrs = first["extraction"]["attributes"]
    assert [(a["entityId"], a["key"], a["value"]) for a in attrs] == [("entity:person/user", "location", "London")]
    # the text names what a follow-up call takes: the session, the turn and the fact's id
    assert text(called).splitlines() == [
        f"Stored turn {first['turnId']} in session {first['sessionId']}.",
        f"+ entity:person/user location = London [{attrs[0]['id']}]"]
    data(await session.call_tool("remember", {"text": "I moved to Berlin.", "session_id": first["sessionId"]}))
    history = data(await session.call_tool("history", {"type": "person", "name": "user", "key": "location"}))
    assert [row["value"] for row in history["history"]] == ["London", "Berlin"]
    called = await session.call_tool("recall", {"query": "Where do I live?", "k": 3})
    hits = data(called)["hits"]
    assert hits and "Berlin" in hits[0]["text"]
    lines = text(called).splitlines()
    assert len(lines) == len(hits) and lines[0].startswith("1. [") and f"id {hits[0]['id']}" in lines[0]


def test_stdio_tools_resources_and_errors(server: str) -> None:
    async def body(session: ClientSession) -> None:
        tools = (await session.list_tools()).tools
        assert {t.name for t in tools} == EXPECTED_TOOLS
        await remember_then_correct(session)

        called = await session.call_tool("state", {})
        state = data(called)
        assert any(a["value"] == "Berlin" for a in state["identity"]["attributes"])
        berlin_row = next(a for a in state["identity"]["attributes"] if a["value"] == "Berlin")
        assert "person/user location = Berlin" in text(called) and f"[{berlin_row['id']}]" in text(called)
        entity = data(await session.call_tool("entity", {"type": "person", "name": "user"}))
        assert [a["value"] for a in entity["attributes"] if a["key"] == "location"] == ["Berlin"]
        context = data(await session.call_tool("get_context", {"query": "where does the user live"}))
        assert "Berlin" in context["context"]

        # One fact by id: the user says Berlin is wrong.
        berlin = next(a for a in state["identity"]["attributes"] if a["value"] == "Berlin")
        called = await session.call_tool("correct_fact", {"id": berlin["id"], "value": "Bern", "note": "typo"})
        fixed = data(called)
        assert fixed["corrections"][0]["oldValue"] == "Berlin" and fixed["fact"]["value"] == "Bern"
        assert "Berlin -> Bern" in text(called) and f"[{fixed['fact']['id']}]" in text(called)
        gone = data(await session.call_tool("delete_fact", {"id": fixed["fact"]["id"]}))
        assert gone["deleted"] == 1
        bad = await session.call_tool("correct_fact", {"id": "act_x", "value": "y"})
        assert bad.isError
        missing = await session.call_tool("delete_fact", {"id": fixed["fact"]["id"]})
        assert missing.isError and "404" in missing.content[0].text
        data(await session.call_tool("remember", {"text": "I live in Berlin."}))

        # Resources: the listed state, and the two templates.
        listed = (await session.list_resources()).resources
        assert [str(r.uri) for r in listed] == ["agent-memory://acme/state"]
        templates = {t.uriTemplate for t in (await session.list_resource_templates()).resourceTemplates}
        assert templates == {"agent-memory://{context}/state", "agent-memory://{context}/entities/{type}/{name}"}
        read = await session.read_resource("agent-memory://acme/state")
        assert read.contents[0].mimeType == "application/json"
        assert any(a["value"] == "Berlin" for a in json.loads(read.contents[0].text)["identity"]["attributes"])
        read = await session.read_resource("agent-memory://acme/entities/person/user")
        record = json.loads(read.contents[0].text)
        assert record["entity"]["id"] == "entity:person/user"
        assert [a["value"] for a in record["attributes"] if a["key"] == "location"] == ["Berlin"]

        with pytest.raises(McpError, match="404"):
            await session.read_resource("agent-memory://acme/entities/person/nobody")
        with pytest.raises(McpError, match="serves context 'acme'"):
            await session.read_resource("agent-memory://globex/state")

        # Tool errors: a 404 problem, a schema violation, a model-level check.
        missing = await session.call_tool("history", {"type": "person", "name": "nobody", "key": "location"})
        assert missing.isError and missing.content[0].text.startswith("404 ")
        assert missing.structuredContent["problem"]["status"] == 404
        assert missing.structuredContent["problem"]["detail"] in missing.content[0].text
        too_many = await session.call_tool("recall", {"query": "x", "k": K_MAX + 1})
        assert too_many.isError and "Input validation error" in too_many.content[0].text
        bad_date = await session.call_tool("entity", {"type": "person", "name": "user", "as_of": "yesterday"})
        assert bad_date.isError and "as_of" in bad_date.content[0].text
        hidden = await session.call_tool("chat", {"message": "hi", "stream": True})
        assert hidden.isError

        # Forget: a dry run lists without deleting.
        dry = data(await session.call_tool("forget", {"query": "Berlin", "dry_run": True}))
        assert dry["deleted"] == 0 and dry["items"]

    run_stdio(server, body)


def test_stdio_tool_schemas_come_from_the_request_models(server: str) -> None:
    async def body(session: ClientSession) -> None:
        listed = {t.name: t.inputSchema for t in (await session.list_tools()).tools}
        assert listed == {t.name: t.input_schema() for t in TOOLS}
        recall = listed["recall"]
        assert set(recall["properties"]) == set(QueryRequest.model_fields)
        assert recall["properties"]["k"]["maximum"] == K_MAX and recall["required"] == ["query"]
        assert recall["additionalProperties"] is False
        assert "stream" not in listed["chat"]["properties"] and "triples" not in listed["remember"]["properties"]
        assert listed["thread_append"]["required"] == ["text", "thread_id"]

    run_stdio(server, body)


def _properties(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, prop in schema.get("properties", {}).items():
        yield name, prop
    for def_name, definition in schema.get("$defs", {}).items():
        for name, prop in definition.get("properties", {}).items():
            yield f"{def_name}.{name}", prop


def _enum(prop: dict[str, Any]) -> list[str]:
    """The allowed values of a property (through anyOf and array items)."""
    found = list(prop.get("enum", []))
    for branch in prop.get("anyOf", []):
        found += _enum(branch)
    if "items" in prop:
        found += _enum(prop["items"])
    return found


def assert_every_parameter_described(tools: list[types.Tool]) -> None:
    """Every parameter of every tool (nested ones too) has a description, and one that names
    each of its allowed values."""
    undescribed, unnamed = [], []
    for tool in tools:
        for name, prop in _properties(tool.inputSchema):
            description = (prop.get("description") or "").strip()
            if not description:
                undescribed.append(f"{tool.name}.{name}")
            unnamed += [f"{tool.name}.{name}={v}" for v in _enum(prop) if v not in description]
    assert not undescribed, undescribed
    assert not unnamed, unnamed


def test_stdio_every_parameter_is_described_and_logs_are_quiet(server: str, tmp_path) -> None:
    async def body(session: ClientSession) -> None:
        tools = (await session.list_tools()).tools
        assert_every_parameter_described(tools)
        recall = next(t for t in tools if t.name == "recall").inputSchema["properties"]
        assert "RFC 3339" in recall["as_of"]["description"]
        data(await session.call_tool("state", {}))

    def logs(*flags: str) -> str:
        log_file = tmp_path / f"stderr{len(flags)}.txt"
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "agent_memory.interfaces.cli", "mcp", "--context", "acme", *flags],
            env={k: v for k, v in _env(server).items() if k != "LOG_LEVEL"})

        async def main() -> None:
            with log_file.open("w") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                    await s.initialize()
                    await body(s)

        anyio.run(main)
        return log_file.read_text()

    assert logs() == ""
    assert "INFO" in logs("--verbose")


def test_streamable_http_tools_threads_and_resources(http_mcp: str) -> None:
    async def body(session: ClientSession) -> None:
        tools = (await session.list_tools()).tools
        assert {t.name for t in tools} == EXPECTED_TOOLS
        assert_every_parameter_described(tools)
        await remember_then_correct(session)
        for text in ("planner: draft the schedule", "reviewer: the schedule looks fine"):
            ref = data(await session.call_tool("thread_append", {"thread_id": "t-1", "text": text}))
            assert ref["thread_id"] == "t-1"
        items = data(await session.call_tool("thread_context", {"thread_id": "t-1", "query": "schedule"}))["items"]
        assert [i["text"] for i in items if i["origin"] == "recent"] == [
            "planner: draft the schedule", "reviewer: the schedule looks fine"]
        read = await session.read_resource("agent-memory://acme/entities/person/user")
        assert json.loads(read.contents[0].text)["entity"]["id"] == "entity:person/user"
        empty = await session.call_tool("thread_append", {"thread_id": "t-1", "text": ""})
        assert empty.isError

    run_http(http_mcp, body)


def test_chat_tool_answers_with_citations(server: str, model) -> None:
    async def body(session: ClientSession) -> None:
        data(await session.call_tool("remember", {"text": "I live in London."}))
        called = await session.call_tool("chat", {"message": "Where do I live?"})
        reply = data(called)
        assert reply["reply"] and reply["sessionId"].startswith("sess_")
        assert text(called).startswith(reply["reply"]) and f"session {reply['sessionId']}" in text(called)
        assert any("London" in c["snippet"] for c in reply["citations"]), reply

    run_stdio(server, body)


def test_the_api_key_is_the_api_s_auth(server: str, runtime) -> None:
    """With keys stored, the server acts with --api-key; without one every tool is a 401."""
    key, _ = runtime.api_keys.create("alice")

    async def without_key(session: ClientSession) -> None:
        denied = await session.call_tool("state", {})
        assert denied.isError and denied.content[0].text.startswith("401 ")
        assert denied.structuredContent["problem"]["status"] == 401

    async def with_key(session: ClientSession) -> None:
        assert data(await session.call_tool("remember", {"text": "I live in Oslo."}))["turnId"]
        state = data(await session.call_tool("state", {}))
        assert [a["value"] for a in state["identity"]["attributes"]] == ["Oslo"]

    run_stdio(server, without_key)
    run_stdio(server, with_key, "--api-key", key)


def test_http_refuses_a_non_loopback_address_without_allow_remote(capsys) -> None:
    from agent_memory.interfaces import cli

    code = cli.main(["mcp", "--context", "acme", "--transport", "http", "--host", "0.0.0.0"])
    assert code == 2 and "refusing to serve MCP on 0.0.0.0" in capsys.readouterr().err


def test_the_documented_registration_snippet_and_tool_table():
    from pathlib import Path

    from agent_memory.interfaces import cli

    section = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    blocks = [json.loads(b.split("```", 1)[0]) for b in section.split("```json\n")[1:]]
    # the process's block (the service's own URL has one too: tests/mcp/test_mcp_route.py)
    (entry,) = [b["mcpServers"]["agent-memory"] for b in blocks if "command" in b["mcpServers"]["agent-memory"]]
    # a host starts it without the shell's PATH: an absolute path, as make mcp-config prints it
    assert entry["command"].startswith("/") and entry["command"].endswith("/.venv/bin/agent-memory")
    args = cli.build_parser().parse_args(entry["args"])
    assert args.command == "mcp" and args.transport == "stdio" and args.context == "acme"
    assert set(entry["env"]) == {"AGENT_MEMORY_URL", "AGENT_MEMORY_API_KEY"}
    table = {line.split("`")[1] for line in section.splitlines() if line.startswith("| `")}
    assert table == EXPECTED_TOOLS == {t.name for t in TOOLS}
