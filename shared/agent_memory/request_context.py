"""The one place a request becomes a caller identity.

Every request resolves once, here, to a principal, a read region, a write region and a
partition. Nothing else in the code reads auth headers.

Callers: when ``principals`` (static API keys, ``agent-memory.yaml`` / env
``AGENT_MEMORY_PRINCIPALS_JSON``) is configured, every request must carry
``Authorization: Bearer <key>`` naming one of them (else 401): the key decides the
principal, its groups and whether it is an admin. With no keys configured (single-user
local mode) every caller is the default principal with full access (admin).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_memory.errors import InvalidContext, InvalidRequest, Unauthorized
from agent_memory.ids import valid_context_id

if TYPE_CHECKING:
    from agent_memory.access import Authenticator
    from agent_memory.config import StaticPrincipal

PARTITION_HEADER = "x-memory-partition"
_PARTITION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class RequestContext:
    context_id: str
    principal: str
    partition: str = "default"
    read_region: tuple[str, ...] | None = None  # None: unrestricted
    write_region: tuple[str, ...] | None = None  # None: unrestricted
    groups: tuple[str, ...] = ()
    admin: bool = False
    request_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def principals(self) -> list[str]:
        """Names a reader list can match: the principal and its ``group:`` memberships."""
        return [self.principal, *(f"group:{g}" if not g.startswith("group:") else g for g in self.groups)]


def resolve(context_id: str, headers: dict[str, str] | None, *, default_principal: str,
            request_id: str | None = None, principals: Sequence[StaticPrincipal] = (),
            authenticator: Authenticator | None = None) -> RequestContext:
    if not valid_context_id(context_id):
        raise InvalidContext(f"context id {context_id!r} must be 1-128 characters of letters, digits, '.', '_' "
                             "or '-', starting with a letter or digit")
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    partition = (headers.get(PARTITION_HEADER) or "default").strip()
    if not _PARTITION_RE.match(partition):
        raise InvalidRequest("X-Memory-Partition must be 1-64 characters of letters, digits, '.', '_' or '-'",
                             field="X-Memory-Partition")
    if authenticator is not None:
        if authenticator.keys_required():
            caller = authenticator.authenticate(headers.get("authorization"))
            return RequestContext(context_id=context_id, principal=caller.principal, partition=partition,
                                  groups=caller.groups, admin=caller.admin, request_id=request_id)
    elif principals:
        caller = _authenticate(headers.get("authorization"), principals)
        return RequestContext(context_id=context_id, principal=caller.principal, partition=partition,
                              groups=caller.groups, admin=caller.admin, request_id=request_id)
    return RequestContext(context_id=context_id, principal=default_principal, partition=partition,
                          admin=True, request_id=request_id)


def _authenticate(authorization: str | None, principals: Sequence[StaticPrincipal]) -> StaticPrincipal:
    """The configured principal whose key the bearer token is (constant-time digest compare)."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("an API key is required: Authorization: Bearer <key>",
                           headers={"WWW-Authenticate": "Bearer"})
    digest = hashlib.sha256(token.strip().encode("utf-8", "surrogatepass")).hexdigest()
    found = None
    for candidate in principals:
        if hmac.compare_digest(candidate.key_sha256, digest):
            found = candidate
    if found is None:
        raise Unauthorized("the API key is not valid", headers={"WWW-Authenticate": "Bearer"})
    return found
