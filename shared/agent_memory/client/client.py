"""``MemoryClient``: the earlier name of the sync client, kept for existing callers.

``MemoryClient(base_url, context, ...)`` is ``AgentMemory(context, base_url=..., ...)``;
new code should use ``AgentMemory`` (or ``AsyncAgentMemory``).
"""

from __future__ import annotations

from typing import Any

from agent_memory.client._common import MemoryItem, ThreadTurnRef
from agent_memory.client.sync import AgentMemory

__all__ = ["MemoryClient", "MemoryItem", "ThreadTurnRef"]


class MemoryClient(AgentMemory):
    def __init__(self, base_url: str, context: str, api_key: str | None = None, partition: str | None = None,
                 timeout: float = 30, retry_budget_s: float = 10, max_retries: int = 5, **options: Any):
        super().__init__(context, base_url=base_url, api_key=api_key, partition=partition, timeout=timeout,
                         retry_budget_s=retry_budget_s, max_retries=max_retries, **options)
