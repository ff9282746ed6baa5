"""``POST /api/v1/{context_id}/mcp``: MCP on the service itself, driven by the MCP SDK's own
streamable-HTTP client against the local server, with each caller's own key: the same tools
as the stdio server, the REST routes' read regions, and 401 without a key on a service with
keys required."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest

import agent_memory

pytest.importorskip("mcp")

from mcp import ClientSession, types  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from agent_memory.client import AgentMemory  # noqa: E402
from agent_memory.http.gateway import LocalGateway, LocalLambdaContext, build_event  # noqa: E402
from agent_memory.interfaces.mcp.tools import TOOLS  # noqa: E402
from tests.access.test_access_api import KEYS, PRINCIPALS  # noqa: E402
from tests.conftest import REPO  # noqa: E402

pytestmark = pytest.mark.parametrize("store_kind", ["sqlite"], indirect=True)


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


def run(url: str, key: str | None, body: Callable[[ClientSession], Awaitable[Any]], **extra: str) -> Any:
    """``body`` in an initialised MCP session at ``url``, as a host configured with ``key``
    (and ``extra`` headers)."""
    out: list[Any] = []

    async def main() -> None:
        headers = {**({"Authorization": f"Bearer {key}"} if key else {}), **extra}
        async with httpx.AsyncClient(headers=headers, timeout=60) as http, \
                streamable_http_client(url, http_client=http) as (read, write, session_id), \
                ClientSession(read, write) as session:
            await session.initialize()
            assert session_id() is None  # stateless: no session outlives a request
            out.append(await body(session))

    anyio.run(main)
    return out[0]


def ok(result: types.CallToolResult) -> Any:
    assert not result.isError, result.content
    return result.structuredContent


def test_the_route_serves_the_stdio_servers_tool_table(server: str):
    async def tools(session: ClientSession) -> list[types.Tool]:
        return (await session.list_tools()).tools

    listed = run(f"{server}/api/v1/acme/mcp", KEYS["alice"], tools)
    assert [t.name for t in listed] == [t.name for t in TOOLS]
    assert {t.name: t.inputSchema for t in listed} == {t.name: t.input_schema() for t in TOOLS}


def test_remember_then_recall_with_the_callers_key_and_its_read_region(server: str):
    url = AgentMemory("acme", base_url=server + "/").mcp_url()  # what a host registers
    assert url == f"{server}/api/v1/acme/mcp"

    async def remember(session: ClientSession) -> Any:
        return ok(await session.call_tool("remember", {"text": "I live in London."}))

    written = run(url, KEYS["alice"], remember)
    (attr,) = written["extraction"]["attributes"]
    assert (attr["key"], attr["value"]) == ("location", "London")
    # the turn went to alice's default write scope, as her REST write would
    assert httpx.get(f"{server}/api/v1/acme/attributes/{attr['id']}",
                     headers={"Authorization": f"Bearer {KEYS['admin']}"}).json()["scopes"] == \
        [["org/acme/user/alice"]]

    async def recall(session: ClientSession) -> Any:
        return ok(await session.call_tool("recall", {"query": "Where do I live?", "k": 5}))

    assert "London" in str(run(url, KEYS["alice"], recall))
    # bob's key reads org/acme/user/bob and shared only: nothing of alice's region comes back
    assert "London" not in str(run(url, KEYS["bob"], recall))

    async def by_id(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("delete_fact", {"id": attr["id"]})

    refused = run(url, KEYS["bob"], by_id)  # a fact outside bob's region is not found, as over REST
    assert refused.isError and refused.structuredContent["problem"]["status"] == 404


def test_delegation_and_partition_headers_bind_the_tools_as_over_rest(server: str):
    url = f"{server}/api/v1/acme/mcp"

    async def remember(session: ClientSession) -> Any:
        return ok(await session.call_tool("remember", {"text": "I live in London."}))

    async def recall(session: ClientSession) -> Any:
        return ok(await session.call_tool("recall", {"query": "Where do I live?", "k": 5}))

    run(url, KEYS["alice"], remember)
    # support reads org/acme/user/* and may delegate: for alice it sees alice's region
    assert "London" in str(run(url, KEYS["support"], recall, **{"X-Spectron-On-Behalf-Of": "alice"}))
    assert "London" in str(run(url, KEYS["support"], recall))
    # for bob: the intersection with bob's region, which holds nothing of alice's
    assert "London" not in str(run(url, KEYS["support"], recall, **{"X-Spectron-On-Behalf-Of": "bob"}))
    # carol is bound to partition p1: her tools run there, and the default partition refuses her
    written = run(url, KEYS["carol"], remember, **{"X-Memory-Partition": "p1"})
    assert written["extraction"]["attributes"]
    r = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                   headers={"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {KEYS['carol']}"})
    assert r.status_code == 403


def test_a_read_only_key_connects_and_a_write_tool_is_refused_as_over_rest(server: str):
    url = f"{server}/api/v1/acme/mcp"

    async def remember(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("remember", {"text": "I live in Rome."})

    refused = run(url, KEYS["support"], remember)  # memory:read and delegate, no write
    assert refused.isError and refused.structuredContent["problem"]["status"] == 403


@pytest.mark.parametrize("require_keys_setting", [True])
def test_keys_required_no_key_is_401_and_a_bad_key_too(server: str):
    url = f"{server}/api/v1/acme/mcp"
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    r = httpx.post(url, json=initialize, headers=accept)
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
    r = httpx.post(url, json=initialize, headers={**accept, "Authorization": "Bearer nope"})
    assert r.status_code == 401
    r = httpx.post(url, json=initialize, headers={**accept, "Authorization": f"Bearer {KEYS['alice']}"})
    assert r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "agent-memory"
    assert r.json()["result"]["serverInfo"]["version"] == agent_memory.__version__  # ours, not the MCP SDK's


def test_a_key_not_bound_to_the_context_is_403(server: str):
    r = httpx.post(f"{server}/api/v1/other/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                   headers={"Accept": "application/json, text/event-stream",
                            "Authorization": f"Bearer {KEYS['alice']}"})
    assert r.status_code == 403


def test_bad_input_is_a_4xx_never_a_500(server: str):
    url = f"{server}/api/v1/acme/mcp"
    auth = {"Authorization": f"Bearer {KEYS['alice']}"}
    both = {"Accept": "application/json, text/event-stream", **auth}
    assert httpx.post(url, content=b"{not json", headers={**both, "Content-Type": "application/json"}) \
        .status_code == 400
    assert httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                      headers={"Accept": "text/html", **auth}).status_code == 406
    assert httpx.post(url, content=b"x", headers={**both, "Content-Type": "text/plain"}).status_code == 400
    r = httpx.get(url, headers=both)
    assert r.status_code == 405 and "POST" in r.headers["allow"]


@pytest.mark.parametrize("accept", [None, "*/*", "application/*;q=0.9"])
def test_no_accept_or_a_wildcard_admits_json(server: str, accept: str | None):
    # HTTP reads no Accept, or a wildcard, as any type: such a request is answered, not a 406.
    headers = {"Authorization": f"Bearer {KEYS['alice']}"} | ({"Accept": accept} if accept else {})
    r = httpx.post(f"{server}/api/v1/acme/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                   headers=headers)
    assert r.status_code == 200 and r.json()["result"] == {}


def test_on_aws_a_tool_call_goes_to_the_apis_own_domain_with_the_callers_headers(runtime, monkeypatch):
    """Without an in-process gateway (Lambda behind API Gateway), a tool's REST request goes to
    the domain API Gateway names in the event, with the MCP request's key, partition and
    delegation and nothing else of it; one JSON-RPC message, one buffered JSON reply."""
    domain = "abc123.execute-api.eu-west-1.amazonaws.com"
    gateway = LocalGateway(REPO)
    seen: list[httpx.Request] = []

    def the_api(request: httpx.Request) -> httpx.Response:  # stands for API Gateway at ``domain``
        seen.append(request)
        answer = gateway.invoke(request.method, request.url.raw_path.decode(), dict(request.headers),
                                request.content)
        return httpx.Response(answer["statusCode"], headers=answer.get("headers") or {},
                              content=(answer.get("body") or "").encode())

    monkeypatch.setattr(httpx, "AsyncHTTPTransport", lambda: httpx.MockTransport(the_api))
    path = "/api/v1/acme/mcp"
    route, params = gateway.match("POST", path)
    handler = gateway.handlers.get(route.handler)

    def rpc(message: dict[str, Any], **headers: str) -> dict[str, Any]:
        hdrs = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                "authorization": f"Bearer {KEYS['alice']}", "x-trace-me": "not forwarded", **headers}
        event = build_event(route, "POST", path, "", hdrs, json.dumps(message).encode(), params, "203.0.113.9")
        event["requestContext"]["domainName"] = domain
        answer = handler(event, LocalLambdaContext("state"))  # no invoke_api: as on Lambda
        assert answer["statusCode"] == 200, answer
        assert answer["headers"]["Content-Type"] == "application/json"
        return json.loads(answer["body"])

    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "I live in London."}}}
    result = rpc(call)["result"]
    assert not result["isError"], result
    assert result["structuredContent"]["extraction"]["attributes"][0]["value"] == "London"
    (request,) = seen
    assert (request.url.scheme, request.url.host, request.url.path) == ("https", domain, "/api/v1/acme/facts")
    assert request.headers["authorization"] == f"Bearer {KEYS['alice']}"
    assert "x-trace-me" not in request.headers and "x-memory-partition" not in request.headers
    # bob's key, through the same path: his region holds nothing of alice's
    recall = {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
              "params": {"name": "recall", "arguments": {"query": "Where do I live?"}}}
    assert "London" not in json.dumps(rpc(recall, authorization=f"Bearer {KEYS['bob']}"))
    assert seen[-1].headers["authorization"] == f"Bearer {KEYS['bob']}"
    # behind a custom domain with a base path, settings.api_url says where the API is
    monkeypatch.setattr(runtime, "settings", dataclasses.replace(runtime.settings,
                                                                 api_url="https://memory.example.com/v"))
    seen.clear()
    gateway_path = the_api

    def based(request: httpx.Request) -> httpx.Response:
        assert request.url.path.startswith("/v/")
        return gateway_path(httpx.Request(request.method, request.url.copy_with(path=request.url.path[2:]),
                                          headers=request.headers, content=request.content))

    monkeypatch.setattr(httpx, "AsyncHTTPTransport", lambda: httpx.MockTransport(based))
    assert "London" in json.dumps(rpc(recall))
    assert [(r.url.host, r.url.path) for r in seen] == [("memory.example.com", "/api/v1/acme/query")]


def test_the_documented_registration_names_the_route_and_the_key(store_kind):
    section = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    blocks = [json.loads(b.split("```", 1)[0]) for b in section.split("```json\n")[1:]]
    (entry,) = [b["mcpServers"]["agent-memory"] for b in blocks if "url" in b["mcpServers"]["agent-memory"]]
    assert entry["type"] == "http" and entry["url"] == "http://127.0.0.1:8080/api/v1/acme/mcp"
    assert entry["headers"]["Authorization"].startswith("Bearer ")
    assert LocalGateway(REPO).match("POST", "/api/v1/acme/mcp") is not None


@pytest.mark.parametrize("message", [{"jsonrpc": "2.0", "method": ""}, {"jsonrpc": "2.0", "id": 1, "method": ""}])
def test_an_empty_method_is_a_400_not_an_accepted_notification(server: str, message: dict):
    # openapi.yaml gives method minLength 1; the SDK alone took {"method": ""} as a notification (202)
    r = httpx.post(f"{server}/api/v1/acme/mcp", json=message, headers={"Authorization": f"Bearer {KEYS['alice']}"})
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/problem+json"), r.text
    assert r.json()["field"] == "method"


@pytest.mark.parametrize("bad_id", [{}, [], 1.5, True, None])
def test_an_id_that_is_not_a_string_or_integer_is_a_400_not_an_accepted_notification(server: str, bad_id):
    # schemathesis (seed 4242, keys) found {"id": {}} taken as a notification (202) by the SDK
    message = {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}
    r = httpx.post(f"{server}/api/v1/acme/mcp", json=message, headers={"Authorization": f"Bearer {KEYS['alice']}"})
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/problem+json"), r.text
    assert r.json()["field"] == "id"


def test_a_body_that_is_not_utf8_is_a_400_not_a_500(server: str):
    # schemathesis (seed 4242, open service) found the SDK's 500 for such a body
    r = httpx.post(f"{server}/api/v1/acme/mcp", content=b";\xda", headers={
        "Authorization": f"Bearer {KEYS['alice']}", "content-type": "application/json"})
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/problem+json"), r.text
    assert r.json()["field"] == "body"
