"""Thread tests run with static API keys configured, so callers can be non-admin principals.

``runtime`` here wraps the root fixture (same store parametrisation: SQLite and DynamoDB
under moto) and only adds the ``principals`` setting; ``server``, ``client`` and
``any_api`` from the root conftest pick this runtime up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from agent_memory.config import parse_principals
from agent_memory.runtime import Runtime, set_runtime

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
CTX = "/api/v1/acme"


@pytest.fixture
def runtime(runtime: Runtime) -> Iterator[Runtime]:
    rt = Runtime(dataclasses.replace(runtime.settings, principals=parse_principals(None, PRINCIPALS)))
    set_runtime(rt)
    yield rt
    set_runtime(runtime)


class As:
    """An API (in-process or HTTP) seen as one caller, optionally in one partition."""

    def __init__(self, api: Any, who: str | None = "admin", partition: str | None = None):
        self.api = api
        self.headers = {}
        if who is not None:
            self.headers["authorization"] = f"Bearer {KEYS[who]}"
        if partition is not None:
            self.headers["x-memory-partition"] = partition

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, **kw: Any):
        return self.api.request(method, CTX + path, body, headers={**self.headers, **(headers or {})}, **kw)

    def get(self, path: str, **kw: Any):
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any):
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any):
        return self.request("PUT", path, body, **kw)


@pytest.fixture
def as_(any_api: Any):
    """``as_("alice")`` -> the API as alice (both transports, both stores)."""
    return lambda who="admin", partition=None: As(any_api, who, partition)


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
