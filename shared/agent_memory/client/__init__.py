"""Python SDK for agent-memory: ``MemoryClient`` (raw HTTP API) and ``Memory`` (entity helpers).

    client = MemoryClient("http://127.0.0.1:8080", "acme", api_key=..., partition="clinic-a")
    thread = Memory("customer-42", client=client).thread("ticket-8492")
    thread.append("Sign-in still fails after the password reset.", {"speaker": "customer"})
    for item in thread.context("What has been tried?", last_n_turns=8):
        print(item.origin, item.text)

Every failure is a ``MemoryError`` (``ApiError`` for error responses of the service).
"""

from agent_memory.client.client import MemoryClient, MemoryItem, ThreadTurnRef
from agent_memory.client.errors import ApiError, MemoryError
from agent_memory.client.memory import Memory, Thread

__all__ = ["ApiError", "Memory", "MemoryClient", "MemoryError", "MemoryItem", "Thread", "ThreadTurnRef"]
