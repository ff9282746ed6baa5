"""``stream_url`` (``AGENT_MEMORY_STREAM_URL``, a stack's ``ChatStreamUrl``): a streamed chat goes
to the chat function's URL with the same path, key and headers; every other call, and a
streamed chat when no stream URL is configured, goes to ``base_url``. Sync and async."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agent_memory.client import AgentMemory, AsyncAgentMemory

DONE = {"reply": "Hi", "sessionId": "sess_1", "traceId": "tr_1", "citations": [],
        "memoryUpdates": {"turnId": "u", "entities": [], "attributes": [], "relations": [], "actions": [],
                          "instructions": [], "uncertainties": [], "corrections": []}}
SSE = (f'event: delta\ndata: {json.dumps({"delta": "Hi"})}\n\n'
       f"event: done\ndata: {json.dumps(DONE)}\n\ndata: [DONE]\n\n").encode()


class Recorder:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.path.endswith("/chat"):
            if json.loads(request.content).get("stream"):
                return httpx.Response(200, content=SSE, headers={"content-type": "text/event-stream"})
            return httpx.Response(200, json=DONE, headers={"content-type": "application/json"})
        return httpx.Response(200, json={"status": "ok"}, headers={"content-type": "application/json"})


STREAM_URL = "https://abc123.lambda-url.us-east-1.on.aws/"


def test_a_streamed_chat_goes_to_the_stream_url_and_everything_else_to_the_base_url():
    rec = Recorder()
    memory = AgentMemory("acme", base_url="https://api.example", api_key="k1", stream_url=STREAM_URL,
                         http_transport=httpx.MockTransport(rec))
    parts = list(memory.chat("hello", stream=True))
    memory.chat("hello")  # buffered: the API
    memory.health()
    assert parts[0] == "Hi" and parts[-1].reply == "Hi"
    urls = [str(r.url) for r in rec.requests]
    assert urls == ["https://abc123.lambda-url.us-east-1.on.aws/api/v1/acme/chat",
                    "https://api.example/api/v1/acme/chat", "https://api.example/api/v1/health"]
    streamed = rec.requests[0]
    assert streamed.headers["authorization"] == "Bearer k1"
    assert streamed.headers["accept"] == "text/event-stream"
    assert json.loads(streamed.content) == {"message": "hello", "stream": True}


def test_without_a_stream_url_a_streamed_chat_falls_back_to_the_base_url(monkeypatch):
    monkeypatch.delenv("AGENT_MEMORY_STREAM_URL", raising=False)
    rec = Recorder()
    memory = AgentMemory("acme", base_url="https://api.example", http_transport=httpx.MockTransport(rec))
    assert memory.stream_url is None
    assert list(memory.chat("hello", stream=True))[-1].session_id == "sess_1"
    assert str(rec.requests[0].url) == "https://api.example/api/v1/acme/chat"


def test_the_stream_url_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("AGENT_MEMORY_STREAM_URL", STREAM_URL)
    assert AgentMemory("acme", base_url="https://api.example").stream_url == STREAM_URL.rstrip("/")


@pytest.mark.parametrize("stream_url", [STREAM_URL, None])
def test_the_async_client_streams_through_the_same_url(stream_url, monkeypatch):
    monkeypatch.delenv("AGENT_MEMORY_STREAM_URL", raising=False)
    rec = Recorder()

    async def run() -> list:
        async with AsyncAgentMemory("acme", base_url="https://api.example", stream_url=stream_url,
                                    http_transport=httpx.MockTransport(rec)) as memory:
            stream = await memory.chat("hello", stream=True)
            return [part async for part in stream]

    parts = asyncio.run(run())
    assert parts[-1].reply == "Hi"
    host = "abc123.lambda-url.us-east-1.on.aws" if stream_url else "api.example"
    assert rec.requests[0].url.host == host
