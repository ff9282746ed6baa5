"""What a key may do: contexts and partitions it is bound to, verbs, read and write regions.

A key (static config, ``agent-memory keys create`` or the tenant's key store) carries:

- ``contexts`` / ``partitions``: the ones it may use (``None``: any). Anything else is 403 on
  every verb: the only 403 a read can get.
- ``verbs``: ``memory:read``, ``memory:write``, ``memory:forget``, ``delegate``, ``grant:manage``
  (mint keys and change grants, only within the caller's own authority: ``within_authority``),
  ``admin`` (``None``: read, write and forget; an admin key holds every verb).
- ``read_region`` / ``write_region``: scope paths (``*`` for one segment) it may read and
  write (``None``: unrestricted). Reads narrow to the read region and never 403; a write
  naming a scope outside the write region is 403 and writes nothing.
- ``default_write_scope``: the scope a write that names none gets.

Delegation (``X-Spectron-On-Behalf-Of``, depth 1, needs ``delegate``): the effective regions
are the intersection of the caller's and the target's, so it never widens either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.access import scopes as scope_lib
from agent_memory.kernel.errors import Forbidden

READ, WRITE, FORGET, DELEGATE, ADMIN = "memory:read", "memory:write", "memory:forget", "delegate", "admin"
GRANT_MANAGE = "grant:manage"
VERBS = (READ, WRITE, FORGET, DELEGATE, GRANT_MANAGE, ADMIN)
# ``required_verb`` of a route any key bound to the context may call (``GET /me``): it needs
# some verb, whichever (a key that holds none gets 403 everywhere).
ANY_VERB = "*"
# The routes of the administration function that change or reveal authority: keys, principals.
_GRANT_AREAS = ("keys", "principals")
DEFAULT_VERBS = (READ, WRITE, FORGET)
ON_BEHALF_OF_HEADER = "x-spectron-on-behalf-of"

# POST routes that only read (the request body is a query, not something to store).
_READ_POSTS = ("/query", "/context", "/fsck", "/keywords/search")
# POST routes that remove memory (the forget verb).
_FORGET_POSTS = ("/forget", "/lifecycle/expire")


def parse_grant_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The grant fields of a key entry (config or stored item), validated; absent = default."""
    out: dict[str, Any] = {}
    for name in ("contexts", "partitions"):
        value = entry.get(name)
        if value is not None:
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
                raise ValueError(f"{name}: expected a list of names")
            out[name] = tuple(sorted({v.strip() for v in value}))
    for name in ("read_region", "write_region"):
        try:
            region = scope_lib.normalise_region(entry.get(name))
        except scope_lib.InvalidScope as exc:
            raise ValueError(f"{name}: {exc}") from exc
        if region is not None:
            out[name] = region
    default_scope = entry.get("default_write_scope")
    if default_scope is not None:
        try:
            out["default_write_scope"] = scope_lib.normalise_path(default_scope)
        except scope_lib.InvalidScope as exc:
            raise ValueError(f"default_write_scope: {exc}") from exc
        if scope_lib.WILDCARD in out["default_write_scope"].split("/"):
            raise ValueError("default_write_scope: a scope written to cannot hold a wildcard")
    verbs = entry.get("verbs")
    if verbs is not None:
        if not isinstance(verbs, (list, tuple)) or not all(v in VERBS for v in verbs):
            raise ValueError(f"verbs: expected a list of {', '.join(VERBS)}")
        out["verbs"] = tuple(sorted(set(verbs)))
    return out


def grant_data(principal: Any) -> dict[str, Any]:
    """The grant fields of a key, as stored (only those that differ from the default)."""
    data: dict[str, Any] = {}
    for name in ("contexts", "partitions", "read_region", "write_region", "verbs"):
        value = getattr(principal, name)
        if value is not None:
            data[name] = list(value)
    if principal.default_write_scope is not None:
        data["default_write_scope"] = principal.default_write_scope
    return data


def verbs_of(principal: Any) -> frozenset[str]:
    if principal.admin:
        return frozenset(VERBS)
    verbs = frozenset(principal.verbs if principal.verbs is not None else DEFAULT_VERBS)
    return verbs | {DELEGATE, GRANT_MANAGE} if ADMIN in verbs else verbs


def is_admin(principal: Any) -> bool:
    return bool(principal.admin) or ADMIN in (principal.verbs or ())


def required_verb(method: str, path: str) -> str:
    """The verb a route needs: reads (GET and query-shaped POSTs), forget (DELETE, /forget),
    admin (reader-list changes), write (everything else)."""
    method = method.upper()
    path = path.rstrip("/")
    if path.endswith("/audit"):
        return ADMIN
    parts = path.split("/")
    if len(parts) >= 5 and parts[1:3] == ["api", "v1"]:
        # /mcp: each tool call is a request of its own, checked for the verb its route needs.
        if len(parts) == 5 and parts[4] in ("me", "mcp"):
            return ANY_VERB
        if parts[4] in _GRANT_AREAS:
            return GRANT_MANAGE
    if method in ("GET", "HEAD"):
        return READ
    if method == "DELETE" or path.endswith(_FORGET_POSTS):
        return FORGET
    if method == "PUT" and path.endswith("/acl"):
        return ADMIN
    if method == "POST" and path.endswith(_READ_POSTS):
        return READ
    return WRITE


def check_binding(principal: Any, context_id: str, partition: str) -> None:
    if principal.contexts is not None and context_id not in principal.contexts:
        raise Forbidden(f"this key is not bound to context {context_id!r}", code="context_not_bound")
    if principal.partitions is not None and partition not in principal.partitions:
        raise Forbidden(f"this key is not bound to partition {partition!r}", code="partition_not_bound")


def check_verb(principal: Any, verb: str, *, label: str | None = None) -> None:
    held = verbs_of(principal)
    if verb == ANY_VERB:
        if not held:
            raise Forbidden(f"{label or principal.principal} holds no verb", code="verb_not_granted")
        return
    if verb not in held:
        who = label or principal.principal
        raise Forbidden(f"{who} does not hold {verb!r}", code="verb_not_granted", verb=verb)


def write_scopes(scopes: Sequence[Sequence[str]], write_region: Sequence[str] | None,
                 default_write_scope: str | None, principal: str | None = None) -> list[list[str]]:
    """The scopes a write stores: the request's, or the default write scope when it names
    none, or else the write region's own places (``_region_places``); 403 (naming the
    offending scope) when any path lies outside the write region."""
    chosen = [list(c) for c in scopes]
    if not chosen and default_write_scope is not None:
        chosen = [[default_write_scope]]
    if not chosen and write_region:
        # No default scope: the write is tagged with the write region itself (any of its places).
        chosen = [[p] for p in _region_places(write_region, principal)]
    if not chosen and write_region is not None:
        # An unscoped record is visible to every reader of the context: only an unrestricted
        # writer may create one.
        raise Forbidden("this key may only write inside its write region; name scopes "
                        f"({', '.join(write_region) or 'none'})", code="scope_outside_write_region")
    outside = scope_lib.writable(chosen, write_region)
    if outside:
        raise Forbidden(f"scope {outside[0]!r} is outside this key's write region",
                        code="scope_outside_write_region", scope=outside[0])
    return chosen


def _region_places(write_region: Sequence[str], principal: str | None) -> list[str]:
    """The concrete places a write that names no scope may take in ``write_region``: each
    plain path as it is, and a path ending in one wildcard (``org/acme/*``) as the writer's own
    place under it (``org/acme/agent-7``), which every reader of the wildcard reads. A region
    with another wildcard, or a principal id that is no single path segment, adds none: such a
    write must name its scopes."""
    places = []
    for path in write_region:
        parts = path.split("/")
        if scope_lib.WILDCARD not in parts:
            places.append(path)
        elif parts.count(scope_lib.WILDCARD) == 1 and parts[-1] == scope_lib.WILDCARD and principal:
            segment = principal.removeprefix("principal:")
            if segment and "/" not in segment and segment not in {".", "..", scope_lib.WILDCARD} \
                    and not any(c.isspace() for c in segment):
                places.append("/".join([*parts[:-1], segment]))
    if len(places) < len(write_region) and any(scope_lib.WILDCARD in p.split("/") for p in write_region):
        return []  # some wildcard has no place of the writer's: name scopes rather than guess
    return sorted(set(places))


def check_writable(scopes: Sequence[Sequence[str]], write_region: Sequence[str] | None, what: str) -> None:
    """403 unless a record stored with ``scopes`` (an existing session's, an uncertainty's)
    lies inside ``write_region``; an unscoped one only for a key without a write region."""
    if write_region is None:
        return
    outside = scope_lib.writable(scopes, write_region)
    if outside:
        raise Forbidden(f"scope {outside[0]!r} of this {what} is outside this key's write region",
                        code="scope_outside_write_region", scope=outside[0])
    if not scopes:
        raise Forbidden(f"this {what} is unscoped; only a key without a write region may change it",
                        code="scope_outside_write_region")
