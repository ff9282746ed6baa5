"""API keys kept in the tenant's record store, digest only.

Each key is one item ``pk = t#api-keys``, ``sk = <sha256 of the key>``; the key itself is
shown once, when it is created, and stored nowhere. The administration service
(``services/operations/administration.py``: ``/keys`` over HTTP, and ``agent-memory keys``,
which calls it with the operator's AWS credentials or on a local data directory) is the only
writer; every request's bearer key is looked up by its digest. A key past its
``valid_until`` is not valid (checked on every lookup, cached or not).

Lookups are cached per process for ``cache_ttl_s`` (hits and misses alike), so a busy
function reads each key about once a minute, and a revoked key stops working everywhere
within that time.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_memory.access.grants import parse_grant_fields
from agent_memory.access.static_principals import StaticPrincipal
from agent_memory.kernel import timeutil
from agent_memory.kernel.ids import new_id
from agent_memory.ports import Condition, Record, RecordStore

KEYS_PK = "t#api-keys"
KEY_PREFIX = "amk_"


# What ``create`` mints: the prefix and 43 characters of token_urlsafe(32).
_KEY_FORM = re.compile(re.escape(KEY_PREFIX) + r"[A-Za-z0-9_-]{43}")


def stored_form(key: str) -> bool:
    """Whether ``key`` could be a stored key at all: any other string is refused without a
    table read (an anonymous flood of made-up keys costs no store call)."""
    return _KEY_FORM.fullmatch(key.strip()) is not None


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
    name: str | None = None  # unique among the keys of a context (``/keys/{name}``)
    valid_until: str | None = None
    # {context: {verb: [paths]}}: the principal's grants there (``access.authority.bounded``)
    principal_grants: dict[str, Any] = field(default_factory=dict)
    digest: str = ""  # the sort key (sha256 of the key), set when read back

    def as_principal(self, key_sha256: str) -> StaticPrincipal:
        return StaticPrincipal(key_sha256=key_sha256, principal=self.principal, groups=self.groups,
                               admin=self.admin, principal_grants=self.principal_grants or None,
                               valid_until=self.valid_until, key_id=self.key_id, **self.grant)

    def expired(self, now_iso: str | None = None) -> bool:
        return self.valid_until is not None and self.valid_until <= (now_iso or timeutil.now_iso())

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "api_key", "key_id": self.key_id, "principal": self.principal, "groups": list(self.groups),
            "admin": self.admin, "created_at": self.created_at,
            "grant": {k: list(v) if isinstance(v, tuple) else v for k, v in self.grant.items()}}
        for name in ("label", "name", "valid_until"):
            if getattr(self, name):
                data[name] = getattr(self, name)
        if self.principal_grants:
            data["principal_grants"] = self.principal_grants
        return data

    @classmethod
    def from_data(cls, data: dict[str, Any], digest: str = "") -> StoredKey:
        return cls(key_id=data["key_id"], principal=data["principal"], groups=tuple(data.get("groups") or ()),
                   admin=bool(data.get("admin")), created_at=data.get("created_at", ""), label=data.get("label"),
                   grant=parse_grant_fields(data.get("grant") or {}), name=data.get("name"),
                   valid_until=data.get("valid_until"), principal_grants=dict(data.get("principal_grants") or {}),
                   digest=digest)


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
               label: str | None = None, *, name: str | None = None, valid_until: str | None = None,
               principal_grants: dict[str, Any] | None = None, **grant: Any) -> tuple[str, StoredKey]:
        """A new key: returns the key (the only time it exists in clear) and what is stored.
        ``grant``: contexts, partitions, read_region, write_region, default_write_scope, verbs."""
        if not principal.strip() or principal.startswith("group:"):
            raise ValueError("principal must be a non-empty name not starting with 'group:'")
        parsed = parse_grant_fields(grant)
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        stored = StoredKey(key_id=new_id("key"), principal=principal.strip(),
                           groups=tuple(g.removeprefix("group:") for g in groups), admin=admin,
                           created_at=timeutil.now_iso(), label=label, grant=parsed, name=name,
                           valid_until=valid_until, principal_grants=dict(principal_grants or {}),
                           digest=digest(raw))
        self.store.put(Record(pk=KEYS_PK, sk=stored.digest, data=stored.data(), expires_at=_epoch(valid_until)),
                       Condition.absent())
        self._forget_cached()
        return raw, stored

    def replace(self, stored: StoredKey) -> None:
        """Rewrite a key read back by ``list`` (its grants, expiry or principal's grants changed)."""
        self.store.put(Record(pk=KEYS_PK, sk=stored.digest, data=stored.data(),
                              expires_at=_epoch(stored.valid_until)), Condition.exists())
        self._forget_cached()

    def remove(self, stored: StoredKey) -> None:
        self.store.delete(KEYS_PK, stored.digest)
        self._forget_cached()

    def list(self) -> list[StoredKey]:
        found: list[StoredKey] = []
        after = None
        while True:
            page = self.store.query(KEYS_PK, after=after, limit=200)
            found += [StoredKey.from_data(r.data, r.sk) for r in page.records if r.data.get("kind") == "api_key"]
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
            now_iso = timeutil.now_iso()
            for k in self.list():
                if not k.expired(now_iso):
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
                return _unexpired(cached[1])
        record = self.store.get(KEYS_PK, key_sha256)
        found = StoredKey.from_data(record.data).as_principal(key_sha256) \
            if record is not None and record.data.get("kind") == "api_key" else None
        with self._lock:
            if len(self._cache) > 10_000:  # invalid keys must not grow memory without bound
                self._cache.clear()
            self._cache[key_sha256] = (now, found)
        return _unexpired(found)

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



def _unexpired(found: StaticPrincipal | None) -> StaticPrincipal | None:
    if found is not None and found.valid_until is not None and found.valid_until <= timeutil.now_iso():
        return None
    return found


def _epoch(instant: str | None) -> int | None:
    """A TTL hint for the store: a day past expiry (the lookup refuses it from expiry on)."""
    if instant is None:
        return None
    return int(timeutil.parse(instant).timestamp()) + 86_400
