"""The one place a request becomes a caller identity.

Every request resolves once, here, to a principal, a read region, a write region and a
partition. Nothing else in the code reads auth headers.

Callers: when ``principals`` (static API keys, ``agent-memory.yaml`` / env
``AGENT_MEMORY_PRINCIPALS_JSON``) is configured, every request must carry
``Authorization: Bearer <key>`` naming one of them (else 401): the key decides the
principal, its groups, its grants (``agent_memory.access.grants``: bound contexts and partitions,
verbs, read and write regions) and whether it is an admin. ``X-Spectron-On-Behalf-Of``
narrows the call to the intersection with another principal's grants. With no keys
configured (single-user local mode) every caller is the default principal with full
access (admin).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agent_memory.access import grants
from agent_memory.access import scopes as scope_lib
from agent_memory.kernel.errors import Forbidden, InvalidContext, InvalidRequest, Unauthorized
from agent_memory.kernel.ids import valid_context_id

if TYPE_CHECKING:
    from agent_memory.access.authentication import Authenticator
    from agent_memory.access.static_principals import StaticPrincipal

PARTITION_HEADER = "x-memory-partition"
_PARTITION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class RequestContext:
    """Who is asking, and where: the caller's principal, grants and regions inside one tenant
    context (``context_id``), resolved once per request and handed to every use case."""

    context_id: str
    principal: str
    partition: str = "default"
    read_region: tuple[str, ...] | None = None  # None: unrestricted
    write_region: tuple[str, ...] | None = None  # None: unrestricted
    groups: tuple[str, ...] = ()
    admin: bool = False
    request_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    default_write_scope: str | None = None
    # Set on a delegated call: the principal whose key made it (``principal`` is the target).
    delegated_by: str | None = None
    # The caller's key as stored (before its principal's grants bound it) and, on a delegated
    # call, the target's grants as they apply in this context (``GET /me``, the administration
    # service's escalation checks).
    key: StaticPrincipal | None = field(default=None, compare=False, repr=False)
    target: StaticPrincipal | None = field(default=None, compare=False, repr=False)

    def write_scopes(self, requested: Sequence[Sequence[str]]) -> list[list[str]]:
        """The scopes a write stores (the default write scope when it names none, else the
        write region's places, this principal's own under a trailing wildcard); 403 when any
        lies outside the write region."""
        from agent_memory.access.grants import write_scopes

        return write_scopes(requested, self.write_region, self.default_write_scope, self.principal)

    def narrowed(self, requested: Sequence[Sequence[str]]) -> RequestContext:
        """This caller reading only inside the scopes a request names (``[]``: unchanged)."""
        paths = sorted({p for clause in requested for p in clause})
        if not paths:
            return self
        return replace(self, read_region=scope_lib.intersect_regions(self.read_region, paths))

    def scoped(self, req: Any) -> Any:
        """``req`` (a request model with ``scopes``) with the scopes this caller's write stores."""
        return req.model_copy(update={"scopes": self.write_scopes(req.scopes)})

    @property
    def principals(self) -> list[str]:
        """Names a reader list can match: the principal and its ``group:`` memberships."""
        return [self.principal, *(f"group:{g}" if not g.startswith("group:") else g for g in self.groups)]


def resolve(context_id: str, headers: dict[str, str] | None, *, default_principal: str,
            request_id: str | None = None, principals: Sequence[StaticPrincipal] = (),
            authenticator: Authenticator | None = None, verb: str | None = None) -> RequestContext:
    """``verb`` (``agent_memory.access.grants.required_verb``) is the one the route needs; ``None``
    checks binding and delegation only."""
    if not valid_context_id(context_id):
        raise InvalidContext(f"context id {context_id!r} must be 1-128 characters of letters, digits, '.', '_' "
                             "or '-', starting with a letter or digit")
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    # One rule for the optional headers (X-Memory-Partition, X-Spectron-On-Behalf-Of,
    # Idempotency-Key): absent means absent; present but empty is a 400, as openapi.yaml states.
    raw_partition = headers.get(PARTITION_HEADER)
    partition = "default" if raw_partition is None else raw_partition.strip()
    if not _PARTITION_RE.fullmatch(partition):
        raise InvalidRequest("X-Memory-Partition must be 1-64 characters of letters, digits, '.', '_' or '-'",
                             field="X-Memory-Partition")
    on_behalf_of = headers.get(grants.ON_BEHALF_OF_HEADER)
    if on_behalf_of is not None:
        # The official client's README names targets as ``principal:<id>`` and sends it verbatim.
        on_behalf_of = on_behalf_of.strip().removeprefix("principal:").strip()
        if not on_behalf_of:
            raise InvalidRequest("X-Spectron-On-Behalf-Of must name a principal (it is empty)",
                                 field="X-Spectron-On-Behalf-Of")
    if authenticator is not None:
        def named(name: str) -> StaticPrincipal | None:
            return authenticator.principal_named(name, context_id)

        if authenticator.keys_required():
            caller = authenticator.authenticate(headers.get("authorization"))
            return _granted(caller, context_id, partition, request_id, verb, on_behalf_of, named)
        if on_behalf_of is not None and on_behalf_of != default_principal:
            # Single-user mode: the local admin may act for any known principal, narrowed to it.
            from agent_memory.access.static_principals import StaticPrincipal as Local

            return _granted(Local(key_sha256="", principal=default_principal, admin=True), context_id,
                            partition, request_id, verb, on_behalf_of, named)
    elif principals:
        caller = _authenticate(headers.get("authorization"), principals)
        return _granted(caller, context_id, partition, request_id, verb, on_behalf_of,
                        lambda name: _named(principals, name))
    if on_behalf_of is not None and on_behalf_of != default_principal:
        raise Forbidden(f"unknown principal {on_behalf_of!r} in X-Spectron-On-Behalf-Of",
                        code="unknown_delegation_target")
    return RequestContext(context_id=context_id, principal=default_principal, partition=partition,
                          admin=True, request_id=request_id)


def _granted(caller: StaticPrincipal, context_id: str, partition: str, request_id: str | None,
             verb: str | None, on_behalf_of: str | None,
             named: Callable[[str], StaticPrincipal | None]) -> RequestContext:
    from agent_memory.access.authority import bounded

    grants.check_binding(caller, context_id, partition)
    key = caller
    caller = bounded(caller, context_id)
    if verb is not None:
        grants.check_verb(caller, verb)
    if on_behalf_of is None:
        return RequestContext(context_id=context_id, principal=caller.principal, partition=partition,
                              groups=caller.groups, admin=grants.is_admin(caller), request_id=request_id,
                              read_region=caller.read_region, write_region=caller.write_region,
                              default_write_scope=caller.default_write_scope, key=key)
    grants.check_verb(caller, grants.DELEGATE)
    target = named(on_behalf_of)
    if target is None:
        raise Forbidden(f"unknown principal {on_behalf_of!r} in X-Spectron-On-Behalf-Of",
                        code="unknown_delegation_target")
    target = bounded(target, context_id)
    _may_act_for(caller, target)
    # Depth 1: the target's own delegation rights are not used; its binding and verb are.
    grants.check_binding(target, context_id, partition)
    if verb is not None:
        grants.check_verb(target, verb, label=f"{target.principal} (on whose behalf this call is made)")
    write_region = grants_intersection(caller.write_region, target.write_region)
    default_scope = target.default_write_scope or caller.default_write_scope
    if default_scope is not None and write_region is not None \
            and not scope_lib.path_covered(default_scope, write_region):
        default_scope = None
    return RequestContext(context_id=context_id, principal=target.principal, partition=partition,
                          groups=target.groups, admin=grants.is_admin(caller) and grants.is_admin(target),
                          request_id=request_id, delegated_by=caller.principal,
                          read_region=grants_intersection(caller.read_region, target.read_region),
                          write_region=write_region, default_write_scope=default_scope, key=key, target=target)


grants_intersection = scope_lib.intersect_regions


def _may_act_for(caller: StaticPrincipal, target: StaticPrincipal) -> None:
    """A caller may act only for a principal that sees no more than it does: the target's
    read region inside the caller's, and an admin target only for an admin caller. Acting
    for someone gives their identity (reader lists match it), so a wider target would let a
    delegate read what neither its own region nor the intersection names."""
    if grants.is_admin(target) and not grants.is_admin(caller):
        raise Forbidden(f"{target.principal} is an admin; only an admin may act for it",
                        code="delegation_beyond_authority")
    if caller.read_region is None:
        return
    outside = [p for p in (target.read_region or ("/",)) if target.read_region is None
               or not scope_lib.path_covered(p, caller.read_region)]
    if outside:
        raise Forbidden(f"{target.principal} may read {outside[0]!r}, which this key may not: it may not "
                        "act for it", code="delegation_beyond_authority")


def _named(principals: Sequence[StaticPrincipal], name: str) -> StaticPrincipal | None:
    from agent_memory.access.authentication import merged_grant

    return merged_grant([p for p in principals if p.principal == name])


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
