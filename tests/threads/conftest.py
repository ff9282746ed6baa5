"""Thread tests run with static API keys configured, so callers can be non-admin principals.

``principals_setting`` here gives the root ``runtime`` (same store parametrisation: SQLite
and DynamoDB under moto) these keys; ``server``, ``client`` and ``any_api`` from the root
conftest pick that runtime up.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.callers import As

KEYS = {
    "admin": "key-admin-0000000000",  # ops-admin, admin
    "care": "key-care-team-7-0000",  # dr-lee, group care-team-7
    "nurse": "key-nurse-00000000000",  # nurse-kim, group care-team-7
    "alice": "key-alice-00000000000",  # alice, group support
    "bob": "key-bob-0000000000000",  # bob, no groups
}
PRINCIPALS = [
    {"key": KEYS["admin"], "principal": "ops-admin", "admin": True},
    {"key": KEYS["care"], "principal": "dr-lee", "groups": ["care-team-7"]},
    {"key": KEYS["nurse"], "principal": "nurse-kim", "groups": ["group:care-team-7"]},
    {"key": KEYS["alice"], "principal": "alice", "groups": ["support"]},
    {"key": KEYS["bob"], "principal": "bob"},
]


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


@pytest.fixture
def as_(any_api: Any):
    """``as_("alice")`` -> the API as alice (both transports, both stores)."""
    return lambda who="admin", partition=None: As(any_api, KEYS[who] if who is not None else None,
                                                  partition=partition)


@pytest.fixture
def sdk(server: str):
    """``sdk("care", partition="clinic-a")`` -> a MemoryClient on the local server as that caller."""
    from agent_memory.client import MemoryClient

    clients: list[MemoryClient] = []

    def make(who: str | None = "admin", partition: str | None = None, **kw: Any) -> MemoryClient:
        client = MemoryClient(server, "acme", api_key=KEYS[who] if who else None, partition=partition, **kw)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
