"""MCP tests run `agent-memory mcp` as a real process against the local server on loopback
(SQLite store: the MCP server only sees the API through the SDK)."""

from __future__ import annotations

import pytest


@pytest.fixture
def store_kind() -> str:
    return "sqlite"
