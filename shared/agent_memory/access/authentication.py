"""Who may call: the one place a bearer key becomes a principal.

Three sources of keys, checked in this order: static keys from the configuration (local
``principals``), the stack's bootstrap admin key (Secrets Manager, hashed when first read
and re-read every few minutes so a rotation takes effect without a deploy), and the keys
stored in the tenant's table (``agent-memory keys``).

Whether keys are required is decided once, when the service starts (the first call of
``keys_required``: ``agent-memory serve`` makes it before it listens, a function on its first
request), and never changes while it runs: deleting the last stored key does not open the
service, and minting the first one does not close it (docs/access.md, "Keys required"). They
are required in Lambda (no setting is consulted there, so no configuration can open a
deployed stack), with ``AGENT_MEMORY_REQUIRE_KEYS=1``, with keys configured or a bootstrap
key, and when a key is stored at start-up. Otherwise every caller is the default principal
(single-user mode; ``serve`` allows it on loopback only).
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from agent_memory.access.api_keys import ApiKeyStore, digest, stored_form
from agent_memory.access.static_principals import StaticPrincipal
from agent_memory.kernel.errors import Unauthorized

BOOTSTRAP_PRINCIPAL = "bootstrap-admin"
BOOTSTRAP_REFRESH_S = 300.0
log = logging.getLogger("agent_memory.access")


def running_in_lambda() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


class Authenticator:
    def __init__(self, static: Sequence[StaticPrincipal] = (), stored: ApiKeyStore | None = None,
                 bootstrap_key: Callable[[], str | None] | None = None, *, deployed: bool | None = None,
                 require_keys: bool = False, recorded: Callable[[str, str], dict | None] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        """``recorded(context_id, principal)``: a principal's recorded grants there
        (``access.principal_grants``), for a delegation target that holds no key."""
        self.static = tuple(static)
        self._recorded = recorded
        self._require_keys = require_keys
        self._mode: tuple[bool, str] | None = None
        self.stored = stored
        self._bootstrap_key = bootstrap_key
        self._deployed = deployed
        self._clock = clock
        self._bootstrap: tuple[float, str | None] | None = None
        self._lock = threading.Lock()

    @property
    def deployed(self) -> bool:
        return running_in_lambda() if self._deployed is None else self._deployed

    def keys_required(self) -> bool:
        """Whether a caller must present a key: decided on the first call, then fixed."""
        return self.mode()[0]

    def mode(self) -> tuple[bool, str]:
        """(keys required, why): decided once, at start-up (``serve`` prints it)."""
        if self._mode is None:
            with self._lock:
                if self._mode is None:
                    self._mode = self._decide()
                    log.debug("API keys %s: %s", "required" if self._mode[0] else "not required (single-user mode)",
                             self._mode[1])
        return self._mode

    def _decide(self) -> tuple[bool, str]:
        if self.deployed:
            return True, "running in AWS Lambda"
        if self._require_keys:
            return True, "AGENT_MEMORY_REQUIRE_KEYS is set"
        if self.static:
            return True, "keys are configured (principals)"
        if self._bootstrap_key is not None:
            return True, "a bootstrap key is configured"
        if self.stored is not None and self.stored.any():
            return True, "a key was stored when the service started"
        return False, "no key configured or stored when the service started"

    def authenticate(self, authorization: str | None) -> StaticPrincipal:
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("an API key is required: Authorization: Bearer <key>",
                               headers={"WWW-Authenticate": "Bearer"})
        key_sha256 = digest(token)
        found = None
        for candidate in self.static:
            if hmac.compare_digest(candidate.key_sha256, key_sha256):
                found = candidate
        if found is None and self.stored is not None and stored_form(token):
            found = self.stored.find(key_sha256)
        # The bootstrap key last: its secret is read (a Secrets Manager client and call) only
        # when a caller's key is neither configured nor stored, not on every cold start.
        if found is None:
            bootstrap = self.bootstrap_digest()
            if bootstrap is not None and hmac.compare_digest(bootstrap, key_sha256):
                found = StaticPrincipal(key_sha256=bootstrap, principal=BOOTSTRAP_PRINCIPAL, admin=True)
        if found is None:
            raise Unauthorized("the API key is not valid", headers={"WWW-Authenticate": "Bearer"})
        return found

    def principal_named(self, name: str, context_id: str | None = None) -> StaticPrincipal | None:
        """The grants of principal ``name`` (a delegation target): all its keys merged; a
        principal without a key, known by its recorded grants in ``context_id``, holds
        exactly those."""
        found = [p for p in self.static if p.principal == name]
        if name == BOOTSTRAP_PRINCIPAL and self._bootstrap_key is not None:
            found.append(StaticPrincipal(key_sha256="", principal=BOOTSTRAP_PRINCIPAL, admin=True))
        if self.stored is not None:
            found += self.stored.with_principal(name)
        merged = merged_grant(found)
        if merged is None and context_id is not None and self._recorded is not None:
            wire = self._recorded(context_id, name)
            if wire is not None:
                from agent_memory.access import authority

                return authority.apply(StaticPrincipal(key_sha256="", principal=name), authority.from_wire(wire))
        return merged

    def bootstrap_digest(self) -> str | None:
        if self._bootstrap_key is None:
            return None
        now = self._clock()
        with self._lock:
            if self._bootstrap is None or now - self._bootstrap[0] >= BOOTSTRAP_REFRESH_S:
                key = self._bootstrap_key()
                self._bootstrap = (now, digest(key) if key and key.strip() else None)
            return self._bootstrap[1]


def merged_grant(keys: Sequence[StaticPrincipal]) -> StaticPrincipal | None:
    """One principal's grants over all its keys: what any of its keys may do (``None``
    regions, contexts or partitions on any key stay unrestricted)."""
    if not keys:
        return None

    def union(values: list[tuple[str, ...] | None]) -> tuple[str, ...] | None:
        return None if any(v is None for v in values) else tuple(sorted({x for v in values for x in v or ()}))

    first = keys[0]
    defaults = [k.default_write_scope for k in keys if k.default_write_scope]
    return replace(first, key_sha256="", groups=tuple(sorted({g for k in keys for g in k.groups})),
                   admin=any(k.admin for k in keys),
                   contexts=union([k.contexts for k in keys]), partitions=union([k.partitions for k in keys]),
                   read_region=union([k.read_region for k in keys]),
                   write_region=union([k.write_region for k in keys]),
                   verbs=union([k.verbs if k.verbs is not None else ("memory:forget", "memory:read", "memory:write")
                                for k in keys]),
                   default_write_scope=defaults[0] if defaults else None)
