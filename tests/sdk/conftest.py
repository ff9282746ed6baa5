"""SDK tests run against the local server over loopback (SQLite store: the SDK only sees
HTTP, and both stores are covered by the API suites)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_memory.client import AgentMemory


@pytest.fixture
def store_kind() -> str:
    return "sqlite"


@pytest.fixture
def env_server(server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The server's URL in ``AGENT_MEMORY_URL``, so examples construct clients as written."""
    monkeypatch.setenv("AGENT_MEMORY_URL", server)
    monkeypatch.delenv("AGENT_MEMORY_API_KEY", raising=False)
    return server


@pytest.fixture
def memory(env_server: str) -> Iterator[AgentMemory]:
    with AgentMemory("acme") as client:
        yield client
