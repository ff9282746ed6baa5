"""Streaming chat (``chat(..., stream=True)``): the service's server-sent events as an
iterator (or async iterator) of text deltas, ending with the final ``ChatResponse``.

    for part in memory.chat("Where do I live?", stream=True):
        if isinstance(part, str):
            print(part, end="", flush=True)      # a text delta
        else:
            print(part.citations)                # the final ChatResponse, always last

Frames: ``event: delta`` (``{"delta": ...}``), one ``event: done`` with the whole response,
or ``event: error`` with a problem document (raised as the matching ``ApiError``), then
``data: [DONE]``. After iteration ``stream.response`` holds the final response too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from agent_memory.client.errors import AgentMemoryError, error_for
from agent_memory.models.wire import ChatResponse


class _Frames:
    """Accumulates SSE lines into (event, data) frames."""

    def __init__(self) -> None:
        self.event: str | None = None
        self.data: list[str] = []

    def feed(self, line: str) -> tuple[str, str] | None:
        if line == "":
            if not self.data:
                self.event = None
                return None
            frame = (self.event or "message", "\n".join(self.data))
            self.event, self.data = None, []
            return frame
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self.event = value
        elif name == "data":
            self.data.append(value)
        return None


def _interpret(event: str, data: str) -> str | ChatResponse | None:
    """A delta's text, the final response, ``None`` for frames to skip; raises on error."""
    if data == "[DONE]":
        return None
    payload: Any = json.loads(data)
    if event == "delta":
        return payload.get("delta", "")
    if event == "done":
        return ChatResponse.model_validate(payload)
    if event == "error":
        status = int(payload.get("status") or 500)
        raise error_for(status, payload)
    return None


class AsyncChatStream:
    """Async iterator of ``str`` deltas, then the ``ChatResponse``."""

    def __init__(self, response: httpx.Response):
        self._response = response
        self.response: ChatResponse | None = None

    async def __aenter__(self) -> AsyncChatStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._response.aclose()

    async def __aiter__(self) -> AsyncIterator[str | ChatResponse]:
        frames = _Frames()
        try:
            async for line in self._response.aiter_lines():
                frame = frames.feed(line)
                if frame is None:
                    continue
                part = _interpret(*frame)
                if isinstance(part, ChatResponse):
                    self.response = part
                if part is not None:
                    yield part
        except httpx.TransportError as exc:
            raise AgentMemoryError(f"chat stream broke off: {exc}") from exc
        finally:
            await self.close()
        if self.response is None:
            raise AgentMemoryError("chat stream ended without a final response")

    async def final(self) -> ChatResponse:
        """Consumes the rest of the stream; the final response."""
        async for _ in self:
            pass
        assert self.response is not None
        return self.response


# --- generated from AsyncChatStream above by tests/sdk/sync_from_async.py --write: do not edit ---
class ChatStream:
    """Iterator of ``str`` deltas, then the ``ChatResponse``. Use it in a ``with`` block, or
    iterate to the end, so the connection is released."""

    def __init__(self, response: httpx.Response):
        self._response = response
        self.response: ChatResponse | None = None

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._response.close()

    def __iter__(self) -> Iterator[str | ChatResponse]:
        frames = _Frames()
        try:
            for line in self._response.iter_lines():
                frame = frames.feed(line)
                if frame is None:
                    continue
                part = _interpret(*frame)
                if isinstance(part, ChatResponse):
                    self.response = part
                if part is not None:
                    yield part
        except httpx.TransportError as exc:
            raise AgentMemoryError(f"chat stream broke off: {exc}") from exc
        finally:
            self.close()
        if self.response is None:
            raise AgentMemoryError("chat stream ended without a final response")

    def final(self) -> ChatResponse:
        """Consumes the rest of the stream; the final response."""
        for _ in self:
            pass
        assert self.response is not None
        return self.response
# --- end of generated code ---
