"""What the sync and async clients share: settings from arguments or the environment,
request headers, thread-context helpers and the page walker's bookkeeping."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from agent_memory.client.errors import AgentMemoryError
from agent_memory.models import wire

DEFAULT_URL = "http://127.0.0.1:8080"
URL_ENV = "AGENT_MEMORY_URL"
API_KEY_ENV = "AGENT_MEMORY_API_KEY"
STREAM_URL_ENV = "AGENT_MEMORY_STREAM_URL"
PARTITION_HEADER = "x-memory-partition"
ON_BEHALF_OF_HEADER = "x-spectron-on-behalf-of"
CONTEXT_BYTE_BUDGET = 16 * 1024 * 1024
DOWNLOAD_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRY_BUDGET_S = 30.0
DEFAULT_MAX_RETRIES = 3


def connection(base_url: str | None, api_key: str | None, partition: str | None,
               on_behalf_of: str | None) -> tuple[str, dict[str, str]]:
    """(base URL, default headers), falling back to ``AGENT_MEMORY_URL`` / ``AGENT_MEMORY_API_KEY``."""
    url = base_url or os.environ.get(URL_ENV) or DEFAULT_URL
    key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
    headers = {"accept": "application/json", "user-agent": "agent-memory-python"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    if partition:
        headers[PARTITION_HEADER] = partition
    if on_behalf_of:
        headers[ON_BEHALF_OF_HEADER] = on_behalf_of
    return url, headers


def stream_url(value: str | None) -> str | None:
    """Where ``chat(..., stream=True)`` goes: ``stream_url``, else ``AGENT_MEMORY_STREAM_URL``
    (a deployed stack's ``ChatStreamUrl`` output, the chat function's URL, which streams); ``None``
    sends it to ``base_url`` like every other call (the local server streams there; a deployed
    HTTP API answers the same frames all at once)."""
    url = value or os.environ.get(STREAM_URL_ENV) or None
    return url.rstrip("/") if url else None


def on_stream_url(call: Any, url: str | None) -> Any:
    """The streamed chat call, sent to ``url`` when one is configured (same path, headers, key)."""
    if url is None:
        return call
    return dataclasses.replace(call, path=url + call.path)


@dataclass(frozen=True)
class ThreadTurnRef:
    """What an append returns: where the turn landed (``replayed`` when an idempotent retry
    or a repeated key got the first append's reply)."""

    thread_id: str
    turn_index: int
    turn_id: str
    entity_id: str | None
    created_at: str
    replayed: bool = False


@dataclass(frozen=True)
class MemoryItem:
    """One thread context item; format ``item.text`` values into a prompt."""

    text: str
    turn_id: str
    turn_index: int
    origin: str  # "recent" | "semantic"
    metadata: dict[str, Any] = field(default_factory=dict)
    entity_id: str | None = None
    score: float | None = None
    created_at: str | None = None


def turn_ref(status: int, data: dict[str, Any]) -> ThreadTurnRef:
    ref = wire.AppendThreadTurnResponse.model_validate(data)
    return ThreadTurnRef(thread_id=ref.thread_id, turn_index=ref.turn_index, turn_id=ref.turn_id,
                         entity_id=ref.entity_id, created_at=ref.created_at, replayed=status == 200)


def unique(items: list[wire.ThreadContextItem]) -> list[wire.ThreadContextItem]:
    """First occurrence wins; the service lists recent turns before semantic matches."""
    seen: set[str] = set()
    out = []
    for item in items:
        if item.turn_id not in seen:
            seen.add(item.turn_id)
            out.append(item)
    return out


def memory_item(item: wire.ThreadContextItem, text: str) -> MemoryItem:
    return MemoryItem(text=text, turn_id=item.turn_id, turn_index=item.turn_index, origin=item.origin,
                      metadata=item.metadata or {}, entity_id=item.entity_id, score=item.score,
                      created_at=item.created_at)


def inline_text(item: wire.ThreadContextItem) -> str | None:
    return item.text if item.text_inline and item.text is not None else None


def check_download(thread_id: str, item: wire.ThreadContextItem, turn: wire.ThreadTurn) -> str:
    if turn.turn_id != item.turn_id:
        raise AgentMemoryError(f"turn {item.turn_index} of thread {thread_id} changed while downloading")
    return turn.text


class ByteBudget:
    """Counts context text bytes, inline or downloaded, against one budget."""

    def __init__(self, budget: int, total_items: int):
        self.budget = budget
        self.total = total_items
        self.used = 0

    def add(self, text: str) -> None:
        self.used += len(text.encode("utf-8"))

    def check(self, done: int) -> None:
        if self.used > self.budget:
            raise AgentMemoryError(f"thread context exceeds the {self.budget}-byte budget ({self.used} bytes "
                                   f"after {done} of {self.total} items); ask for fewer turns")


def next_cursor(page: dict[str, Any]) -> str | None:
    # ``page`` is the cursor object, or (lists paged by number as well: /documents, chunks)
    # the page number, with the cursor beside it.
    info = page.get("page")
    if not isinstance(info, dict):
        info = page
    return info.get("nextCursor") if info.get("hasMore") else None
