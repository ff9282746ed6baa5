"""``Memory`` (one entity) and its ``Thread`` helper: the spec's high-level conversation API.

One ``Memory`` per entity (a customer, a patient); ``memory.thread(id)`` is an ordered
conversation of that entity. ``Thread.append`` tags each turn with the entity and sends no
reader list, so its turns are tenant-visible (or follow the thread's default list); use
``append_thread`` on the client when a turn needs its own readers or a caller-owned
idempotency key. ``Thread.context`` asks for the entity's recent window plus older semantic
matches of the same thread; the server takes the last N turns first and then keeps the
entity's, so a mixed-entity thread can yield fewer than N recent items.
``Memory.recall`` is the entity-wide view across threads and sessions: retrieved memory
about the entity, formatted for a prompt.

Both work over ``AgentMemory`` and ``AsyncAgentMemory``: with the async client every
method returns an awaitable.
"""

from __future__ import annotations

from typing import Any

from agent_memory.client.aio import AsyncAgentMemory
from agent_memory.client.sync import AgentMemory


class Memory:
    def __init__(self, entity_id: str | None, *, client: AgentMemory | AsyncAgentMemory):
        self.entity_id = entity_id
        self.client = client

    def thread(self, thread_id: str) -> Thread:
        return Thread(self, thread_id)

    def recall(self, query: str, k: int | None = None) -> Any:
        """Retrieved memory about this entity (``ContextResponse``: ``context``, ``sources``)."""
        return self.client.context(query, k=k, subject=self.entity_id)


class Thread:
    def __init__(self, memory: Memory, thread_id: str):
        self.memory = memory
        self.thread_id = thread_id

    def append(self, text: str, metadata: dict[str, Any] | None = None) -> Any:
        return self.memory.client.append_thread(self.thread_id, text, entity_id=self.memory.entity_id,
                                                metadata=metadata)

    def context(self, query: str, last_n_turns: int = 10, recent_first: bool = False) -> Any:
        return self.memory.client.thread_context(self.thread_id, query, last_n_turns=last_n_turns,
                                                 recent_first=recent_first, entity_id=self.memory.entity_id)
