"""Scope selectors in disjunctive normal form, and read-region coverage.

A selector is a list of clauses; each clause is a list of scope paths that a reader must
all cover (AND); the outer list is OR. ``[]`` is unscoped: visible to every reader of the
context. A region path covers itself and every path below it (``org/acme`` covers
``org/acme/user/alice``); ``None`` as a region means unrestricted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Dnf = list[list[str]]


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
    return "/".join(parts)


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


def covers(region_path: str, path: str) -> bool:
    return path == region_path or path.startswith(region_path + "/")


def path_covered(path: str, region: Iterable[str] | None) -> bool:
    if region is None:
        return True
    return any(covers(r, path) for r in region)


def visible(scopes: Sequence[Sequence[str]], region: Sequence[str] | None) -> bool:
    """Whether a record with DNF ``scopes`` is readable by a caller with ``region``."""
    if region is None or not scopes:
        return True
    return any(all(path_covered(p, region) for p in clause) for clause in scopes)


def ancestors(path: str) -> list[str]:
    """``a/b/c`` -> ``["a", "a/b", "a/b/c"]``: the region paths that would cover ``path``."""
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]
