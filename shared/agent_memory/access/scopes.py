"""Scope selectors in disjunctive normal form, and read-region coverage.

A selector is a list of clauses; each clause is a list of scope paths that a reader must
all cover (AND); the outer list is OR. ``[]`` is unscoped: visible to every reader of the
context. A region path covers itself and every path below it (``org/acme`` covers
``org/acme/user/alice``); ``None`` as a region means unrestricted. A region path may use
``*`` for one whole segment (``org/acme/user/*`` covers ``org/acme/user/alice/notes``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agent_memory.kernel.scope_paths import ancestors as ancestors  # the region paths covering a path

Dnf = list[list[str]]
# A scope path is a record key in the scope registry and part of index keys: at most this many
# UTF-8 bytes once normalised (openapi.yaml's Scopes), inside the store's 1,024-byte sort key.
MAX_SCOPE_PATH_BYTES = 512


class InvalidScope(ValueError):
    pass


def normalise_path(path: str) -> str:
    if not isinstance(path, str):
        raise InvalidScope("scope paths must be strings")
    parts = [p for p in path.strip().split("/") if p]
    if not parts:
        raise InvalidScope("empty scope path")
    for p in parts:
        if p in {".", ".."} or any(c.isspace() for c in p):
            raise InvalidScope(f"invalid scope path segment {p!r}")
    normal = "/".join(parts)
    if len(normal.encode("utf-8", "surrogatepass")) > MAX_SCOPE_PATH_BYTES:
        raise InvalidScope(f"a scope path is at most {MAX_SCOPE_PATH_BYTES} bytes (UTF-8)")
    return normal


def normalise_dnf(value: object) -> Dnf:
    """Accept ``None``, a bare string, a list of strings (one clause each) or a list of
    clauses, and return canonical DNF: paths normalised, clauses sorted and deduplicated."""
    if value is None:
        return []
    if isinstance(value, str):
        return [[normalise_path(value)]]
    if not isinstance(value, list):
        raise InvalidScope("scopes must be a string or a list")
    clauses: set[tuple[str, ...]] = set()
    for clause in value:
        if isinstance(clause, str):
            clauses.add((normalise_path(clause),))
        elif isinstance(clause, list):
            if not clause:
                raise InvalidScope("empty scope clause")
            clauses.add(tuple(sorted({normalise_path(p) for p in clause})))
        else:
            raise InvalidScope("each scope clause must be a string or a list of strings")
    return [list(c) for c in sorted(clauses)]


WILDCARD = "*"


def covers(region_path: str, path: str) -> bool:
    if WILDCARD not in region_path:
        return path == region_path or path.startswith(region_path + "/")
    want, have = region_path.split("/"), path.split("/")
    return len(have) >= len(want) and all(w in (WILDCARD, h) for w, h in zip(want, have, strict=False))


def normalise_region(value: object) -> tuple[str, ...] | None:
    """A key's region: ``None`` (unrestricted) or a list of region paths (``*`` segments allowed)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InvalidScope("a region must be a list of scope paths")
    return tuple(sorted({normalise_path(p) for p in value}))


def _meet(a: str, b: str) -> str | None:
    """The region path covering exactly what both ``a`` and ``b`` cover, or ``None`` if nothing."""
    sa, sb = a.split("/"), b.split("/")
    out: list[str] = []
    for x, y in zip(sa, sb, strict=False):
        if x == y or y == WILDCARD:
            out.append(x)
        elif x == WILDCARD:
            out.append(y)
        else:
            return None
    longer = sa if len(sa) > len(sb) else sb
    return "/".join(out + longer[len(out):])


def intersect_regions(a: Sequence[str] | None, b: Sequence[str] | None) -> tuple[str, ...] | None:
    """What both regions cover (delegation never widens): exact, wildcards included."""
    if a is None:
        return None if b is None else tuple(b)
    if b is None:
        return tuple(a)
    met = {m for x in a for y in b if (m := _meet(x, y)) is not None}
    # Drop paths another path of the result already covers: a smaller, equivalent region.
    return tuple(sorted(p for p in met if not any(q != p and covers(q, p) for q in met)))


def writable(scopes: Sequence[Sequence[str]], region: Sequence[str] | None) -> list[str]:
    """The scope paths of ``scopes`` that ``region`` does not cover (empty: the write is allowed).

    Every path of every clause must be inside the write region: a record is only as
    confined as its least confined clause, so no clause may reach outside."""
    if region is None:
        return []
    return sorted({p for clause in scopes for p in clause if not path_covered(p, region)})


def path_covered(path: str, region: Iterable[str] | None) -> bool:
    if region is None:
        return True
    return any(covers(r, path) for r in region)


def visible(scopes: Sequence[Sequence[str]], region: Sequence[str] | None) -> bool:
    """Whether a record with DNF ``scopes`` is readable by a caller with ``region``."""
    if region is None or not scopes:
        return True
    return any(all(path_covered(p, region) for p in clause) for clause in scopes)


def union(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]]) -> Dnf:
    """The selector visible to exactly the readers of ``a`` or of ``b`` (OR of the clauses):
    unscoped (``[]``) when either is, else the clauses of both in canonical order."""
    if not a or not b:
        return []
    return normalise_dnf([list(c) for c in (*a, *b)])


def removable(scopes: Sequence[Sequence[str]], read_region: Sequence[str] | None,
              write_region: Sequence[str] | None) -> bool:
    """Whether a caller may remove a record with ``scopes``: it reads it and writes every path
    of every clause (``/forget``'s rule: an unscoped record only with an unrestricted write
    region)."""
    if not visible(scopes, read_region):
        return False
    if write_region is None:
        return True
    return bool(scopes) and not writable(scopes, write_region)


# --- read lenses --------------------------------------------------------------------------
#
# A lens narrows a read (``/query``'s ``lens`` and ``scopeView``) in the selectors' DNF shape:
# an OR of clauses, each an AND of paths. A record matches a lens clause when, for every path
# of the clause, some path of the record's scopes lies in that path's view. It never widens a
# read: the caller's region applies as well (``visible``). The views:
#
# - ``strict``: the lens path and everything below it;
# - ``merged``: that, plus the lens path's ancestors themselves (not their other descendants)
#   and unscoped records (the context as a whole is every lens path's first ancestor);
# - ``crossTeam``: the lens path's siblings (its parent's other children) and everything below
#   them, besides the lens path's own; a top-level path's siblings are every top-level path.

LENS_VIEWS = ("strict", "merged", "crossTeam")


def _in_view(lens_path: str, path: str, view: str) -> bool:
    if covers(lens_path, path):
        return True
    if view == "merged":
        return lens_path.startswith(path + "/")  # ``path`` is an ancestor of the lens path
    if view == "crossTeam":
        parent, _, _ = lens_path.rpartition("/")
        return covers(f"{parent}/{WILDCARD}" if parent else WILDCARD, path)
    return False


def lens_admits(scopes: Sequence[Sequence[str]], lens: Sequence[Sequence[str]] | None, view: str = "strict") -> bool:
    """Whether a record with DNF ``scopes`` lies in ``lens`` (``None``: no lens) seen as ``view``."""
    if not lens:
        return True
    if not scopes:
        return view == "merged"
    paths = {p for clause in scopes for p in clause}
    return any(all(any(_in_view(lp, p, view) for p in paths) for lp in clause) for clause in lens)
