"""API keys kept in the tenant's record store, digest only.

Each key is one item ``pk = t#api-keys``, ``sk = <sha256 of the key>``; the key itself is
shown once, when it is created, and stored nowhere. ``agent-memory keys`` writes them (with
the operator's AWS credentials, or into a local data directory); every request's bearer
key is looked up by its digest.

Lookups are cached per process for ``cache_ttl_s`` (hits and misses alike), so a busy
function reads each key about once a minute, and a revoked key stops working everywhere
within that time.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_memory.access.grants import parse_grant_fields
from agent_memory.config import StaticPrincipal
from agent_memory.kernel import timeutil
from agent_memory.kernel.ids import new_id
from agent_memory.ports import Condition, Record, RecordStore

KEYS_PK = "t#api-keys"
KEY_PREFIX = "amk_"


def digest(key: str) -> str:
    return hashlib.sha256(key.strip().encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class StoredKey:
    key_id: str
    principal: str
    groups: tuple[str, ...]
    admin: bool
    created_at: str
    label: str | None = None
    grant: dict[str, Any] = field(default_factory=dict)  # agent_memory.access.grants fields

    def as_principal(self, key_sha256: str) -> StaticPrincipal:
        return StaticPrincipal(key_sha256=key_sha256, principal=self.principal, groups=self.groups,
                               admin=self.admin, **self.grant)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> StoredKey:
        return cls(key_id=data["key_id"], principal=data["principal"], groups=tuple(data.get("groups") or ()),
                   admin=bool(data.get("admin")), created_at=data.get("created_at", ""), label=data.get("label"),
                   grant=parse_grant_fields(data.get("grant") or {}))


class ApiKeyStore:
    def __init__(self, store: RecordStore, *, cache_ttl_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.cache_ttl_s = cache_ttl_s
        self._clock = clock
        self._cache: dict[str, tuple[float, StaticPrincipal | None]] = {}
        self._any: tuple[float, bool] | None = None
        self._by_principal: tuple[float, dict[str, list[StaticPrincipal]]] | None = None
        self._lock = threading.Lock()

    def create(self, principal: str, groups: Sequence[str] = (), admin: bool = False,
               label: str | None = None, **grant: Any) -> tuple[str, StoredKey]:
        """A new key: returns the key (the only time it exists in clear) and what is stored.
        ``grant``: contexts, partitions, read_region, write_region, default_write_scope, verbs."""
        if not principal.strip() or principal.startswith("group:"):
            raise ValueError("principal must be a non-empty name not starting with 'group:'")
        parsed = parse_grant_fields(grant)
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        stored = StoredKey(key_id=new_id("key"), principal=principal.strip(),
                           groups=tuple(g.removeprefix("group:") for g in groups), admin=admin,
                           created_at=timeutil.now_iso(), label=label, grant=parsed)
        data = {"kind": "api_key", "key_id": stored.key_id, "principal": stored.principal,
                "groups": list(stored.groups), "admin": stored.admin, "created_at": stored.created_at,
                "grant": {k: list(v) if isinstance(v, tuple) else v for k, v in parsed.items()}}
        if label:
            data["label"] = label
        self.store.put(Record(pk=KEYS_PK, sk=digest(raw), data=data), Condition.absent())
        self._forget_cached()
        return raw, stored

    def list(self) -> list[StoredKey]:
        found: list[StoredKey] = []
        after = None
        while True:
            page = self.store.query(KEYS_PK, after=after, limit=200)
            found += [StoredKey.from_data(r.data) for r in page.records if r.data.get("kind") == "api_key"]
            if page.last_key is None:
                return sorted(found, key=lambda k: (k.created_at, k.key_id))
            after = page.last_key

    def with_principal(self, name: str) -> list[StaticPrincipal]:
        """The grants of every key of principal ``name`` (delegation targets; cached)."""
        now = self._clock()
        with self._lock:
            cached = self._by_principal
            if cached is None or now - cached[0] >= self.cache_ttl_s:
                cached = None
        if cached is None:
            table: dict[str, list[StaticPrincipal]] = {}
            for k in self.list():
                table.setdefault(k.principal, []).append(k.as_principal(""))
            cached = (now, table)
            with self._lock:
                self._by_principal = cached
        return list(cached[1].get(name, ()))

    def revoke(self, key_id: str) -> bool:
        """Delete the key with this id; ``False`` when there is none."""
        after = None
        while True:
            page = self.store.query(KEYS_PK, after=after, limit=200)
            for record in page.records:
                if record.data.get("key_id") == key_id:
                    self.store.delete(record.pk, record.sk)
                    self._forget_cached()
                    return True
            if page.last_key is None:
                return False
            after = page.last_key

    def find(self, key_sha256: str) -> StaticPrincipal | None:
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key_sha256)
            if cached is not None and now - cached[0] < self.cache_ttl_s:
                return cached[1]
        record = self.store.get(KEYS_PK, key_sha256)
        found = StoredKey.from_data(record.data).as_principal(key_sha256) \
            if record is not None and record.data.get("kind") == "api_key" else None
        with self._lock:
            if len(self._cache) > 10_000:  # invalid keys must not grow memory without bound
                self._cache.clear()
            self._cache[key_sha256] = (now, found)
        return found

    def any(self) -> bool:
        """Whether any key exists (cached like lookups): a local server with stored keys requires them."""
        now = self._clock()
        if self._any is not None and now - self._any[0] < self.cache_ttl_s:
            return self._any[1]
        result = bool(self.store.query(KEYS_PK, limit=1).records)
        self._any = (now, result)
        return result

    def _forget_cached(self) -> None:
        with self._lock:
            self._cache.clear()
            self._any = None
            self._by_principal = None

