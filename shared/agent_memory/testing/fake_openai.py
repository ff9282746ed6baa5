"""A latency-realistic fake model: a local OpenAI-compatible HTTP endpoint.

It serves ``POST /v1/chat/completions`` (plain, streamed as SSE, and structured output via
``response_format: json_schema``) and ``POST /v1/embeddings``, so the service's real
``openai`` adapters run against it unchanged (``OPENAI_BASE_URL``). Answers come from the
offline provider's logic: structured extraction from the offline extractor (matched by the
schema name the adapter sends), replies from the offline responder, vectors from the
hashing embedder, so what it returns means something.

What makes it realistic is its timing and failures, all adjustable while it runs
(``server.behaviour``): a base latency plus uniform jitter before the answer (before the
first streamed chunk), a failure rate (HTTP 500 with an OpenAI error body) and a hang
rate (the request is read and never answered, until the client gives up). Tests run it at
50 ms or less, benchmarks at 800 ms (``agent-memory fake-model --latency-ms 800``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("agent_memory.fake_openai")

CHAT_PATH = "/v1/chat/completions"
CHAT_LOG = 50
EMBEDDING_MAX_TOKENS = 8191


def _tokens(text: str) -> int:
    return -(-len(text.encode("utf-8")) // 4)

EMBEDDINGS_PATH = "/v1/embeddings"


@dataclass
class Behaviour:
    """How the fake model behaves; a test may change fields while the server runs."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    failure_rate: float = 0.0  # share of requests answered HTTP 500
    hang_rate: float = 0.0  # share of requests never answered
    stream_chunk_ms: float = 0.0  # pause between streamed chunks after the first
    stream_piece_chars: int = 16  # characters per streamed chunk (4 is about one token)
    # A streamed reply sends ``hold_after`` pieces, then waits (at most 60 s) until ``hold`` is
    # set: a test orders what it sees against a reply that cannot finish before it lets it.
    hold: threading.Event | None = None
    hold_after: int = 1
    seed: int | None = None
    _random: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        self._random.seed(self.seed)

    def delay_s(self) -> float:
        jitter = self._random.uniform(-self.jitter_ms, self.jitter_ms) if self.jitter_ms else 0.0
        return max(0.0, self.latency_ms + jitter) / 1000

    def outcome(self) -> str:
        """``hang``, ``fail`` or ``answer`` for one request, drawn from the rates."""
        roll = self._random.random()
        if roll < self.hang_rate:
            return "hang"
        if roll < self.hang_rate + self.failure_rate:
            return "fail"
        return "answer"


@dataclass
class Stats:
    requests: int = 0
    answered: int = 0
    failed: int = 0
    hung: int = 0
    by_path: dict[str, int] = field(default_factory=dict)
    # Requests being answered now per path, and the most at once: how parallel callers really were.
    in_flight: dict[str, int] = field(default_factory=dict)
    max_in_flight: dict[str, int] = field(default_factory=dict)
    # The message lists of the latest chat requests (at most CHAT_LOG), for tests that check
    # what a caller's own prompt carried.
    chats: list[list[dict[str, Any]]] = field(default_factory=list)


class OfflineAnswers:
    """The offline provider's answers, keyed the way the OpenAI adapters ask."""

    def __init__(self) -> None:
        from agent_memory.adapters.models.offline import OfflineLanguageModel
        from agent_memory.adapters.models.schemas import schema_name
        from agent_memory.adapters.offline import register_offline_extractor

        self.model = OfflineLanguageModel(name="offline/fake-openai")
        register_offline_extractor(self.model)
        # response_format.json_schema.name -> the schema class the offline model answers
        self.schemas = {schema_name(cls): cls for cls in self.model._handlers}
        self._embedders: dict[int, Any] = {}
        self._lock = threading.Lock()

    def chat(self, body: dict[str, Any]) -> str:
        from agent_memory.ports import ChatMessage

        messages = [ChatMessage(m.get("role", "user"), _text(m.get("content"))) for m in body.get("messages", [])]
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            name = (fmt.get("json_schema") or {}).get("name", "")
            schema = self.schemas.get(name)
            if schema is None:
                raise LookupError(f"the fake model cannot answer schema {name!r}")
            system = "\n".join(m.content for m in messages if m.role == "system")
            user = "\n".join(m.content for m in messages if m.role == "user")
            return self.model.structured(system=system, user=user, schema=schema).model_dump_json()
        return self.model.complete(messages).text

    def embed(self, texts: list[str], dimensions: int) -> list[list[float]]:
        from agent_memory.adapters.embedders import HashingEmbedder

        with self._lock:
            embedder = self._embedders.get(dimensions) or self._embedders.setdefault(
                dimensions, HashingEmbedder(dimension=dimensions))
        return embedder.embed(texts).tolist()


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _completion(model: str, text: str, prompt: str) -> dict[str, Any]:
    prompt_tokens, completion_tokens = len(prompt) // 4, len(text) // 4
    return {
        "id": f"chatcmpl-fake-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _chunk(model: str, delta: dict[str, Any], finish: str | None) -> bytes:
    event = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
             "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    return f"data: {json.dumps(event)}\n\n".encode()


def _error(message: str, type_: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": None}}


class FakeOpenAIApp:
    """The ASGI application (``uvicorn``-served by ``FakeOpenAIServer``)."""

    def __init__(self, behaviour: Behaviour | None = None):
        self.behaviour = behaviour or Behaviour()
        self.stats = Stats()
        self.answers = OfflineAnswers()
        self._lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        raw = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        with self._lock:
            self.stats.requests += 1
            self.stats.by_path[path] = self.stats.by_path.get(path, 0) + 1
            outcome = self.behaviour.outcome()
            delay = self.behaviour.delay_s()
        if outcome == "hang":
            with self._lock:
                self.stats.hung += 1
            while (await receive())["type"] != "http.disconnect":  # until the client gives up
                pass
            return
        with self._lock:
            now = self.stats.in_flight[path] = self.stats.in_flight.get(path, 0) + 1
            self.stats.max_in_flight[path] = max(self.stats.max_in_flight.get(path, 0), now)
        try:
            await self._answer(send, path, raw, outcome, delay)
        finally:
            with self._lock:
                self.stats.in_flight[path] -= 1

    async def _answer(self, send: Any, path: str, raw: bytes, outcome: str, delay: float) -> None:
        await asyncio.sleep(delay)
        if outcome == "fail":
            with self._lock:
                self.stats.failed += 1
            await self._json(send, 500, _error("the fake model was told to fail this request"))
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            await self._json(send, 400, _error("malformed JSON", "invalid_request_error"))
            return
        try:
            if path == CHAT_PATH:
                await self._chat(send, body)
            elif path == EMBEDDINGS_PATH:
                await self._embeddings(send, body)
            else:
                await self._json(send, 404, _error(f"no route {path}", "invalid_request_error"))
                return
        except (LookupError, ValueError) as exc:  # a schema or prompt the offline logic cannot answer
            await self._json(send, 400, _error(str(exc), "invalid_request_error"))
            return
        with self._lock:
            self.stats.answered += 1

    async def _chat(self, send: Any, body: dict[str, Any]) -> None:
        model = body.get("model", "fake")
        with self._lock:
            self.stats.chats = [*self.stats.chats[-(CHAT_LOG - 1):], list(body.get("messages", []))]
        text = await asyncio.to_thread(self.answers.chat, body)
        prompt = "".join(_text(m.get("content")) for m in body.get("messages", []))
        if not body.get("stream"):
            await self._json(send, 200, _completion(model, text, prompt))
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
        size = max(1, self.behaviour.stream_piece_chars)
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        await send({"type": "http.response.body", "body": _chunk(model, {"role": "assistant", "content": ""}, None),
                    "more_body": True})
        for i, piece in enumerate(pieces):
            hold = self.behaviour.hold
            if hold is not None and i == self.behaviour.hold_after:
                await asyncio.to_thread(hold.wait, 60)
            if self.behaviour.stream_chunk_ms:
                await asyncio.sleep(self.behaviour.stream_chunk_ms / 1000)
            finish = "stop" if i == len(pieces) - 1 else None
            await send({"type": "http.response.body", "body": _chunk(model, {"content": piece}, finish),
                        "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    async def _embeddings(self, send: Any, body: dict[str, Any]) -> None:
        inputs = body.get("input")
        texts = inputs if isinstance(inputs, list) else [inputs]
        if not texts or not all(isinstance(t, str) for t in texts):
            await self._json(send, 400, _error("input must be a string or a list of strings",
                                               "invalid_request_error"))
            return
        # As OpenAI does, an input over the model's context (8,191 tokens; estimated here as
        # one token per 4 UTF-8 bytes) is a 400, not a silent cut.
        longest = max(_tokens(t) for t in texts)
        if longest > EMBEDDING_MAX_TOKENS:
            await self._json(send, 400, _error(
                f"This model's maximum context length is {EMBEDDING_MAX_TOKENS} tokens, however you requested "
                f"{longest} tokens", "invalid_request_error"))
            return
        vectors = await asyncio.to_thread(self.answers.embed, texts, int(body.get("dimensions") or 384))
        tokens = sum(_tokens(t) for t in texts)
        await self._json(send, 200, {
            "object": "list", "model": body.get("model", "fake"),
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    @staticmethod
    async def _json(send: Any, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})


class FakeOpenAIServer:
    """The fake model on loopback, in a background thread: ``with FakeOpenAIServer() as fake:``
    then point the service at ``fake.url`` (``OPENAI_BASE_URL``)."""

    def __init__(self, behaviour: Behaviour | None = None, *, host: str = "127.0.0.1", port: int = 0):
        import uvicorn

        self.app = FakeOpenAIApp(behaviour)
        # proto IPPROTO_TCP so asyncio turns Nagle off (see agent_memory.http.local_server.LocalServer)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.host, self.port = self._socket.getsockname()[:2]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", backlog=1024,
                                timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def behaviour(self) -> Behaviour:
        return self.app.behaviour

    @property
    def stats(self) -> Stats:
        return self.app.stats

    @property
    def url(self) -> str:
        """The OpenAI base URL (``…/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def serve_forever(self) -> None:
        self._server.run(sockets=[self._socket])

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake model server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def run(args: Any) -> int:
    """``agent-memory fake-model``: serve until interrupted."""
    behaviour = Behaviour(latency_ms=args.latency_ms, jitter_ms=args.jitter_ms, failure_rate=args.failure_rate,
                          hang_rate=args.hang_rate, stream_chunk_ms=args.stream_chunk_ms, seed=args.seed)
    server = FakeOpenAIServer(behaviour, host=args.host, port=args.port)
    print(f"fake OpenAI-compatible model on {server.url} ({behaviour.latency_ms:g} ms ± {behaviour.jitter_ms:g}, "
          f"failure rate {behaviour.failure_rate:g}, hang rate {behaviour.hang_rate:g}); "
          f"use OPENAI_BASE_URL={server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
