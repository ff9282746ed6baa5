"""Python SDK for agent-memory, sync and async.

    from agent_memory.client import AgentMemory, AsyncAgentMemory

    with AgentMemory("acme-prod", api_key=...) as memory:          # or AGENT_MEMORY_URL / _API_KEY
        session = memory.sessions.create(scopes=["org/acme/user/alice"])
        result = memory.chat("What do you know about me?", session_id=session.id)
        print(result.reply)
        session.close()

Results are the service's pydantic wire models (``agent_memory.models.wire``), with
snake_case attributes. Errors are ``AgentMemoryError``; error responses are ``ApiError``
subclasses by status. Importing this package loads httpx and pydantic only: no AWS, search
or model library (the light install, ``pip install agent-memory``).
"""

from agent_memory.client._common import MemoryItem, ThreadTurnRef
from agent_memory.client.aio import AsyncAgentMemory, AsyncSession
from agent_memory.client.client import MemoryClient
from agent_memory.client.entity_memory import Memory, Thread
from agent_memory.client.errors import (
    AgentMemoryError,
    ApiError,
    AuthenticationError,
    ConflictError,
    ModelError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    ValidationError,
)
from agent_memory.client.streaming import AsyncChatStream, ChatStream
from agent_memory.client.sync import AgentMemory, Session

__all__ = [
    "AgentMemory", "AgentMemoryError", "ApiError", "AsyncAgentMemory", "AsyncChatStream", "AsyncSession",
    "AuthenticationError", "ChatStream", "ConflictError", "Memory", "MemoryClient", "MemoryItem", "ModelError",
    "NotFoundError", "PayloadTooLargeError", "PermissionDeniedError", "RateLimitedError", "ServerError",
    "Session", "Thread", "ThreadTurnRef", "ValidationError",
]
