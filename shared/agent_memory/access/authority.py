"""A caller's authority in one context, and the wire form of grants (``{verb: [paths]}``).

The official client speaks of grants as a map from verb to scope paths
(``{"memory:read": ["org/acme/*"], "admin": ["/"]}``) and changes them one ``{path, verbs}``
at a time. Ours (``agent_memory.access.grants``) are verbs plus a read and a write region.
The mapping (docs/decisions.md, "Administration"):

- ``memory:read`` paths are the read region, ``memory:write`` paths the write region; ``/``
  is the whole context (an unrestricted region, unscoped records included);
- every other verb (``memory:forget``, ``delegate``, ``grant:manage``, ``admin``) is held
  for the whole context or not at all: its only path is ``/``;
- a verb that is not a key of the map is not held.

``Authority`` is that triple; ``within`` is the escalation check (no key is minted and no
grant is given beyond what the caller holds), ``granted``/``revoked`` apply one
``{path, verbs}`` change, and ``bounded`` narrows a key by its principal's grants.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent_memory.access import grants
from agent_memory.access import scopes as scope_lib

ROOT = "/"
REGION_VERBS = {grants.READ: "read_region", grants.WRITE: "write_region"}


@dataclass(frozen=True)
class Authority:
    verbs: frozenset[str]
    read_region: tuple[str, ...] | None = None  # None: the whole context
    write_region: tuple[str, ...] | None = None

    def region(self, verb: str) -> tuple[str, ...] | None:
        return self.read_region if verb == grants.READ else self.write_region


def of(principal: Any) -> Authority:
    """The authority of a key (a ``StaticPrincipal``) as it stands."""
    return Authority(frozenset(grants.verbs_of(principal)), principal.read_region, principal.write_region)


def _path(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a grant path must be a non-empty string ('/' for the whole context)")
    if value.strip() == ROOT:
        return ROOT
    try:
        return scope_lib.normalise_path(value)
    except scope_lib.InvalidScope as exc:
        raise ValueError(f"grant path {value!r}: {exc}") from exc


def _verbs(value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)) or not value or not all(v in grants.VERBS for v in value):
        raise ValueError(f"verbs: expected a non-empty list of {', '.join(grants.VERBS)}")
    return sorted(set(value))


def to_wire(a: Authority) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for verb in sorted(a.verbs):
        if verb in REGION_VERBS:
            region = a.region(verb)
            out[verb] = [ROOT] if region is None else list(region)
        else:
            out[verb] = [ROOT]
    return out


def from_wire(data: Any) -> Authority:
    """A ``{verb: [paths]}`` map (400-worthy ``ValueError`` when malformed)."""
    if not isinstance(data, Mapping):
        raise ValueError("grants: expected an object of verb -> list of paths")
    verbs: set[str] = set()
    regions: dict[str, tuple[str, ...] | None] = {}
    for verb, paths in data.items():
        if verb not in grants.VERBS:
            raise ValueError(f"grants: unknown verb {verb!r} (one of {', '.join(grants.VERBS)})")
        if isinstance(paths, str):
            paths = [paths]
        if not isinstance(paths, (list, tuple)):
            raise ValueError(f"grants.{verb}: expected a list of paths")
        normal = [_path(p) for p in paths]
        if verb in REGION_VERBS:
            if not normal:
                continue  # a verb with no path is not held
            regions[verb] = None if ROOT in normal else tuple(sorted(set(normal)))
        elif normal != [ROOT] * len(normal) or not normal:
            raise ValueError(f"grants.{verb}: {verb} is held for the whole context only: its path is '/'")
        verbs.add(verb)
    return Authority(frozenset(verbs), regions.get(grants.READ), regions.get(grants.WRITE))


def _region_within(inner: tuple[str, ...] | None, outer: tuple[str, ...] | None) -> bool:
    if outer is None:
        return True
    if inner is None:
        return False
    return all(scope_lib.path_covered(p, outer) for p in inner)


def within(inner: Authority, outer: Authority) -> list[str]:
    """What ``inner`` holds beyond ``outer`` (empty: nothing; it does not widen), as
    ``verb`` or ``verb path`` strings for the 403's detail."""
    beyond: list[str] = [v for v in sorted(inner.verbs) if v not in outer.verbs]
    for verb in REGION_VERBS:
        if verb in inner.verbs and verb in outer.verbs and not _region_within(inner.region(verb), outer.region(verb)):
            region = inner.region(verb)
            paths = [ROOT] if region is None else [p for p in region if not scope_lib.path_covered(p, outer.region(verb))]
            beyond += [f"{verb} {p}" for p in paths]
    return beyond


def intersect(a: Authority, b: Authority) -> Authority:
    return Authority(a.verbs & b.verbs, scope_lib.intersect_regions(a.read_region, b.read_region),
                     scope_lib.intersect_regions(a.write_region, b.write_region))


def change(path: Any, verbs: Any) -> tuple[str, list[str]]:
    """One ``{path, verbs}`` grant change, validated."""
    normal, chosen = _path(path), _verbs(verbs)
    if normal != ROOT:
        whole = [v for v in chosen if v not in REGION_VERBS]
        if whole:
            raise ValueError(f"{', '.join(whole)}: held for the whole context only; grant it at '/'")
    return normal, chosen


def as_authority(path: str, verbs: Sequence[str]) -> Authority:
    """What one change names, as an authority (for the escalation check)."""
    region = None if path == ROOT else (path,)
    return Authority(frozenset(verbs), region if grants.READ in verbs else None,
                     region if grants.WRITE in verbs else None)


def granted(a: Authority, path: str, verbs: Sequence[str]) -> Authority:
    out = a
    for verb in verbs:
        if verb in REGION_VERBS:
            current = out.region(verb) if verb in out.verbs else ()
            if path == ROOT or current is None:
                region: tuple[str, ...] | None = None
            else:
                paths = {p for p in current if not scope_lib.path_covered(p, [path])} | {path}
                region = tuple(sorted(p for p in paths if not any(q != p and scope_lib.covers(q, p) for q in paths)))
            out = replace(out, **{REGION_VERBS[verb]: region})
        out = replace(out, verbs=out.verbs | {verb})
    return out


def revoked(a: Authority, path: str, verbs: Sequence[str]) -> Authority:
    out = a
    for verb in verbs:
        if verb not in out.verbs:
            continue
        if verb in REGION_VERBS and path != ROOT:
            current = out.region(verb)
            if current is None:
                raise ValueError(f"{verb} is held for the whole context: revoke it at '/' and grant what "
                                 "should remain")
            region = tuple(p for p in current if not scope_lib.path_covered(p, [path]))
            if region:
                out = replace(out, **{REGION_VERBS[verb]: region})
                continue
        out = replace(out, verbs=out.verbs - {verb}, **({REGION_VERBS[verb]: None} if verb in REGION_VERBS else {}))
    return out


def effective_at(a: Authority, path: str) -> list[str]:
    """The verbs ``a`` holds at ``path`` (``/``: for the whole context)."""
    found = []
    for verb in sorted(a.verbs):
        if verb in REGION_VERBS:
            region = a.region(verb)
            if region is not None and (path == ROOT or not scope_lib.path_covered(path, region)):
                continue
        found.append(verb)
    return found


def bounded(principal: Any, context_id: str) -> Any:
    """A key narrowed by its principal's grants in ``context_id`` (``principal_grants``, kept
    on the key record by the administration service); unchanged where it has none."""
    bounds = (getattr(principal, "principal_grants", None) or {}).get(context_id)
    if bounds is None:
        return principal
    a = intersect(of(principal), from_wire(bounds))
    return apply(principal, a)


def unreadable_contexts(principal: Any) -> list[str]:
    """The contexts where a key's principal's grants (``bounded``) leave it no ``memory:read``,
    though the key holds it (``None``: no key, single-user mode)."""
    if principal is None:
        return []
    return sorted(c for c in (getattr(principal, "principal_grants", None) or {})
                  if grants.READ not in grants.verbs_of(bounded(principal, c)))


def apply(principal: Any, a: Authority) -> Any:
    """``principal`` (a ``StaticPrincipal``) holding exactly ``a``."""
    return replace(principal, admin=False, verbs=tuple(sorted(a.verbs)), read_region=a.read_region,
                   write_region=a.write_region,
                   default_write_scope=principal.default_write_scope
                   if principal.default_write_scope is None or a.write_region is None
                   or scope_lib.path_covered(principal.default_write_scope, a.write_region) else None)


def key_fields(a: Authority) -> dict[str, Any]:
    """``a`` as the grant fields of a stored key (``grants.parse_grant_fields``)."""
    out: dict[str, Any] = {"verbs": sorted(a.verbs)}
    if a.read_region is not None:
        out["read_region"] = list(a.read_region)
    if a.write_region is not None:
        out["write_region"] = list(a.write_region)
    return out
