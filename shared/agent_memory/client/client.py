"""``MemoryClient``: the raw thread API over HTTP, scoped to one context and partition.

Use one client per (context, partition, principal): every call it makes, appends, reads,
downloads and semantic search alike, carries the same ``X-Memory-Partition`` and key, so
they share one hard boundary.

Appends are idempotent end to end: ``append_thread`` sends an idempotency key (yours, or
one it generates) and reuses that key for its own retries, so a retry after a lost reply
never creates a second turn. Durable workers that may restart mid-request should pass their
own key, persisted with the message, so a later process resumes the same logical append.

``thread_context`` returns one flat list: the latest ordered window, then up to five older
semantic matches (a turn in both appears once, as recent). The service returns turn text
inline up to its response budget and marks the rest ``textInline: false``; the client then
materialises the items batch by batch, eight at a time (downloading any text not inline,
at most eight turns concurrently), and counts every item's text bytes, inline or
downloaded, against one ``context_byte_budget`` (16 MiB). Once a batch crosses it, no later
batch is scheduled and ``MemoryError`` is raised.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from agent_memory.client.errors import ApiError, MemoryError
from agent_memory.client.transport import Transport

CONTEXT_BYTE_BUDGET = 16 * 1024 * 1024
DOWNLOAD_CONCURRENCY = 8


@dataclass(frozen=True)
class ThreadTurnRef:
    """What an append returns: where the turn landed."""

    thread_id: str
    turn_index: int
    turn_id: str
    entity_id: str | None
    created_at: str
    replayed: bool = False


@dataclass(frozen=True)
class MemoryItem:
    """One context item; format ``item.text`` values into a prompt."""

    text: str
    turn_id: str
    turn_index: int
    origin: str  # "recent" | "semantic"
    metadata: dict[str, Any] = field(default_factory=dict)
    entity_id: str | None = None
    score: float | None = None
    created_at: str | None = None


class MemoryClient:
    def __init__(self, base_url: str, context: str, api_key: str | None = None, partition: str | None = None,
                 timeout: float = 30, retry_budget_s: float = 10, max_retries: int = 5, *,
                 context_byte_budget: int = CONTEXT_BYTE_BUDGET, download_concurrency: int = DOWNLOAD_CONCURRENCY,
                 sleep: Callable[[float], None] | None = None, http_transport: httpx.BaseTransport | None = None):
        self.context = context
        self.partition = partition
        self.context_byte_budget = context_byte_budget
        self.download_concurrency = download_concurrency
        headers = {"accept": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        if partition:
            headers["x-memory-partition"] = partition
        kwargs: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
        self._transport = Transport(base_url, headers, timeout=timeout, retry_budget_s=retry_budget_s,
                                    max_retries=max_retries, http_transport=http_transport, **kwargs)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _thread_path(self, thread_id: str, suffix: str = "") -> str:
        return f"/api/v1/{quote(self.context, safe='')}/threads/{quote(thread_id, safe=':')}{suffix}"

    # --- raw thread API ---------------------------------------------------------------

    def append_thread(self, thread_id: str, text: str, *, entity_id: str | None = None,
                      metadata: dict[str, Any] | None = None, acl_readers: list[str] | None = None,
                      idempotency_key: str | None = None) -> ThreadTurnRef:
        """Append one turn. ``acl_readers=None`` sends no list (the thread's default applies);
        ``[]`` quarantines the turn. The idempotency key is reused across this call's retries."""
        key = idempotency_key or f"sdk-{uuid.uuid4()}"
        body: dict[str, Any] = {"text": text}
        if entity_id is not None:
            body["entity_id"] = entity_id
        if metadata is not None:
            body["metadata"] = metadata
        if acl_readers is not None:
            body["acl_readers"] = list(acl_readers)
        response = self._transport.request("POST", self._thread_path(thread_id, "/turns"), json=body,
                                           headers={"Idempotency-Key": key}, idempotent=True, keyed_write=True)
        data = response.json()
        return ThreadTurnRef(thread_id=data["threadId"], turn_index=data["turnIndex"], turn_id=data["turnId"],
                             entity_id=data.get("entityId"), created_at=data["createdAt"],
                             replayed=response.status_code == 200)

    def list_thread_turns(self, thread_id: str, *, after_index: int | None = None, entity_id: str | None = None,
                          page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every readable turn after ``after_index``, in order, following pages lazily."""
        params: dict[str, Any] = {"limit": page_size}
        if after_index is not None:
            params["after_index"] = after_index
        if entity_id is not None:
            params["entity_id"] = entity_id
        while True:
            page = self._transport.request("GET", self._thread_path(thread_id, "/turns"), params=params,
                                           idempotent=True).json()
            yield from page["items"]
            if not page["page"]["hasMore"]:
                return
            params = {k: v for k, v in params.items() if k != "after_index"} | {"cursor": page["page"]["nextCursor"]}

    def get_thread_turn(self, thread_id: str, turn_index: int) -> dict[str, Any]:
        return self._transport.request("GET", self._thread_path(thread_id, f"/turns/{int(turn_index)}"),
                                       idempotent=True).json()

    def get_thread(self, thread_id: str) -> dict[str, Any]:
        return self._transport.request("GET", self._thread_path(thread_id), idempotent=True).json()

    def set_thread_acl(self, thread_id: str, acl_readers: list[str] | None) -> dict[str, Any]:
        return self._transport.request("PUT", self._thread_path(thread_id, "/acl"),
                                       json={"acl_readers": acl_readers}, idempotent=True).json()

    def thread_context(self, thread_id: str, query: str, *, last_n_turns: int = 10, recent_first: bool = False,
                       entity_id: str | None = None) -> list[MemoryItem]:
        body: dict[str, Any] = {"query": query, "last_n_turns": last_n_turns, "recent_first": recent_first}
        if entity_id is not None:
            body["entity_id"] = entity_id
        items = self._transport.request("POST", self._thread_path(thread_id, "/context"), json=body,
                                        idempotent=True).json()["items"]
        return self._materialise(thread_id, _unique(items))

    def _materialise(self, thread_id: str, items: list[dict[str, Any]]) -> list[MemoryItem]:
        out: list[MemoryItem] = []
        used = 0
        step = self.download_concurrency
        with ThreadPoolExecutor(max_workers=step, thread_name_prefix="memory-download") as pool:
            for lo in range(0, len(items), step):
                batch = items[lo:lo + step]
                texts = list(pool.map(lambda item: self._item_text(thread_id, item), batch))
                for item, text in zip(batch, texts, strict=True):
                    if text is None:  # gone or no longer readable since the context call
                        continue
                    used += len(text.encode("utf-8"))
                    out.append(_item(item, text))
                if used > self.context_byte_budget:
                    raise MemoryError(f"thread context exceeds the {self.context_byte_budget}-byte budget "
                                      f"({used} bytes after {lo + len(batch)} of {len(items)} items); "
                                      "ask for fewer turns")
        return out

    def _item_text(self, thread_id: str, item: dict[str, Any]) -> str | None:
        if item.get("textInline", True) and item.get("text") is not None:
            return item["text"]
        try:
            turn = self.get_thread_turn(thread_id, item["turnIndex"])
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        if turn["turnId"] != item["turnId"]:
            raise MemoryError(f"turn {item['turnIndex']} of thread {thread_id} changed while downloading")
        return turn["text"]


def _unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """First occurrence wins; the service lists recent turns before semantic matches."""
    seen: set[str] = set()
    out = []
    for item in items:
        if item["turnId"] not in seen:
            seen.add(item["turnId"])
            out.append(item)
    return out


def _item(item: dict[str, Any], text: str) -> MemoryItem:
    return MemoryItem(text=text, turn_id=item["turnId"], turn_index=item["turnIndex"], origin=item["origin"],
                      metadata=item.get("metadata") or {}, entity_id=item.get("entityId"), score=item.get("score"),
                      created_at=item.get("createdAt"))
