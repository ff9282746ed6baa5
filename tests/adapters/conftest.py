"""Fixtures for the model adapter tests.

``openai_server`` is a local OpenAI-compatible HTTP endpoint (chat completions, JSON and
SSE, and embeddings) so the adapters run through the real ``openai`` client library
(and the functions' thin client, ``http_client``) without touching the network. Responses look like the recorded API's; every request body
is kept for assertions, and replies can be scripted per path (status, body, delay).

``bedrock_client`` is a real ``bedrock-runtime`` botocore client with fake credentials,
meant to be wrapped in ``botocore.stub.Stubber``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"


@dataclass
class Reply:
    """A scripted reply: ``body`` is a dict (sent as JSON), a str (sent raw) or ``None``
    (the default answer for the path: JSON, or SSE when the request asked to stream)."""

    status: int = 200
    body: Any = None
    delay: float = 0.0


def chat_completion(content: str | None, *, model: str = "gpt-test", prompt_tokens: int = 11,
                    completion_tokens: int = 5) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def error_body(message: str, type_: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": None}}


def fake_vector(text: str, index: int, dimensions: int) -> list[float]:
    """Deterministic, deliberately not unit-norm, so the adapter's normalisation shows."""
    return [float(len(text) + 1), float(index + 1)] + [0.5] * (dimensions - 2)


class FakeOpenAIServer:
    # Helpers reachable through the fixture, so test modules need not import this conftest.
    CHAT = CHAT_PATH
    EMBEDDINGS = EMBEDDINGS_PATH
    Reply = Reply
    completion = staticmethod(chat_completion)
    error = staticmethod(error_body)
    vector = staticmethod(fake_vector)

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self.chat_content = "Hello from the fake model."
        self.stream_stall = 0.0  # seconds to go quiet after the first SSE event
        # Set, the stream waits after its first piece of text until the test sets it (at most 10 s), and
        # ``released_in_time`` says whether it was set before that wait ran out.
        self.stream_hold: threading.Event | None = None
        self.released_in_time: bool | None = None
        self.stream_events: list[str] | None = None  # raw SSE lines to send instead of the default
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}")
                with server._lock:
                    server.requests.append((self.path, body))
                    scripted = server.scripts[self.path].popleft() if server.scripts[self.path] else None
                if scripted and scripted.delay:
                    time.sleep(scripted.delay)
                if (scripted is None or scripted.body is None) and body.get("stream"):
                    self._send_sse(body)
                    return
                reply = scripted if scripted and scripted.body is not None else server.default_reply(self.path, body)
                payload = reply.body
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(scripted.status if scripted else reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_sse(self, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if server.stream_events is not None:
                    self.wfile.write("".join(server.stream_events).encode())
                    return
                text = server.chat_content
                pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
                chunks = [{"role": "assistant", "content": ""}] + [{"content": p} for p in pieces]
                for i, delta in enumerate(chunks):
                    event = {
                        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1_700_000_000,
                        "model": body.get("model"),
                        "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": "stop" if i == len(chunks) - 1 else None}],
                    }
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    if i == 0 and server.stream_stall:
                        self.wfile.flush()
                        time.sleep(server.stream_stall)
                    if i == 1 and server.stream_hold is not None:  # after the first piece of text
                        self.wfile.flush()
                        server.released_in_time = server.stream_hold.wait(10)
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *args: None  # a client that timed out closes early
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def default_reply(self, path: str, body: dict[str, Any]) -> Reply:
        if path == CHAT_PATH:
            return Reply(body=chat_completion(self.chat_content, model=body.get("model", "gpt-test")))
        if path == EMBEDDINGS_PATH:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            dims = body.get("dimensions", 8)
            data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, i, dims)}
                    for i, t in enumerate(inputs)]
            data.reverse()  # the API does not promise order; the adapter sorts by index
            return Reply(body={"object": "list", "data": data, "model": body["model"],
                               "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
        return Reply(status=404, body=error_body(f"no route {path}", "invalid_request_error"))

    def enqueue(self, path: str, *replies: Reply) -> None:
        self.scripts[path].extend(replies)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.requests if p == path]


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    server = FakeOpenAIServer()
    thread = threading.Thread(target=server.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


@pytest.fixture(params=["library", "http"])
def http_client(request: pytest.FixtureRequest) -> str:
    """The OpenAI client an adapter test runs through: the openai library (the local service's)
    and the thin one on urllib3 (the functions', adapters/openai_http.py); each test runs both."""
    return request.param


@pytest.fixture
def bedrock_client() -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}),
    )
