"""Who may call: the one place a bearer key becomes a principal.

Three sources of keys, checked in this order: static keys from the configuration (local
``principals``), the stack's bootstrap admin key (Secrets Manager, hashed when first read
and re-read every few minutes so a rotation takes effect without a deploy), and the keys
stored in the tenant's table (``agent-memory keys``).

In Lambda a key is always required: ``keys_required`` does not consult any setting there,
so no configuration can open a deployed stack. Locally, with no key configured or stored,
every caller is the default principal (single-user mode; ``serve`` allows it on loopback
only).
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from collections.abc import Callable, Sequence

from agent_memory.api_keys import ApiKeyStore, digest
from agent_memory.config import StaticPrincipal
from agent_memory.errors import Unauthorized

BOOTSTRAP_PRINCIPAL = "bootstrap-admin"
BOOTSTRAP_REFRESH_S = 300.0


def running_in_lambda() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


class Authenticator:
    def __init__(self, static: Sequence[StaticPrincipal] = (), stored: ApiKeyStore | None = None,
                 bootstrap_key: Callable[[], str | None] | None = None, *, deployed: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.static = tuple(static)
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
        if self.deployed or self.static or self._bootstrap_key is not None:
            return True
        return self.stored is not None and self.stored.any()

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
        bootstrap = self.bootstrap_digest()
        if found is None and bootstrap is not None and hmac.compare_digest(bootstrap, key_sha256):
            found = StaticPrincipal(key_sha256=bootstrap, principal=BOOTSTRAP_PRINCIPAL, admin=True)
        if found is None and self.stored is not None:
            found = self.stored.find(key_sha256)
        if found is None:
            raise Unauthorized("the API key is not valid", headers={"WWW-Authenticate": "Bearer"})
        return found

    def bootstrap_digest(self) -> str | None:
        if self._bootstrap_key is None:
            return None
        now = self._clock()
        with self._lock:
            if self._bootstrap is None or now - self._bootstrap[0] >= BOOTSTRAP_REFRESH_S:
                key = self._bootstrap_key()
                self._bootstrap = (now, digest(key) if key and key.strip() else None)
            return self._bootstrap[1]
