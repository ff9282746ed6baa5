"""Every problem ``type`` the service can answer has a section in docs/http-api.md ("Problem
types") that explains it, and every section there is a type the service can answer.

The types are found in the code, not in a list kept beside it: each ``type_slug`` a domain
error declares, and each slug a problem document is built with (``problem_response``,
``problem_body``, the gateway's and static pages' ``_problem``/``_plain``, including the
defaults and mappings a ``slug`` variable takes)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from agent_memory.kernel.errors import PROBLEM_TYPE_BASE

REPO = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((REPO / "shared" / "agent_memory").rglob("*.py")), *sorted((REPO / "functions").rglob("*.py"))]
DOC = REPO / "docs" / "http-api.md"
BUILDERS = {"problem_response": 3, "problem_body": 3, "_problem": 3}
SLUG = re.compile(r"^[a-z]+(-[a-z]+)*$")


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and SLUG.match(n.value)}


def _parse(path: Path) -> ast.AST:
    """``ast.parse``, once more if CPython 3.11's AST builder trips over a recursion limit that
    another thread changed meanwhile ("AST constructor recursion depth mismatch", a SystemError
    fixed in later CPython releases; seen once under a busy xdist worker)."""
    source = path.read_text(encoding="utf-8")
    for attempt in range(3):
        try:
            return ast.parse(source, filename=str(path))
        except SystemError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def answered_types() -> dict[str, str]:
    """slug -> a place that answers it."""
    found: dict[str, str] = {}
    for path in SOURCES:
        tree = _parse(path)
        where = str(path.relative_to(REPO))
        for node in ast.walk(tree):
            slugs: set[str] = set()
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in ("type_slug", "slug")
                                                    for t in node.targets):
                slugs = _strings(node.value)
            elif isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in BUILDERS:
                    at = BUILDERS[name]
                    if len(node.args) > at:
                        slugs |= _strings(node.args[at])
                    slugs |= {s for kw in node.keywords if kw.arg == "slug" for s in _strings(kw.value)}
            for slug in slugs:
                found.setdefault(slug, f"{where}:{node.lineno}")
    return found


def documented_types() -> dict[str, str]:
    """slug -> its section's text, from docs/http-api.md's "Problem types"."""
    text = DOC.read_text(encoding="utf-8")
    part = text.split("\n## Problem types\n", 1)[1].split("\n## ", 1)[0]
    sections = re.split(r"^### ", part, flags=re.M)[1:]
    return {s.split("\n", 1)[0].strip().strip("`"): s.split("\n", 1)[1].strip() for s in sections}


def test_the_scan_finds_the_types_the_service_answers():
    found = answered_types()
    # one of each source: a domain error, the resolver, the gateway, the local server, a static page
    assert {"invalid-request", "internal", "method-not-allowed", "request-timeout", "not-implemented"} <= set(found)


def test_every_type_the_service_answers_is_explained():
    documented = documented_types()
    missing = {slug: where for slug, where in answered_types().items() if slug not in documented}
    assert missing == {}, f"problem types with no section under docs/http-api.md 'Problem types': {missing}"
    for slug, body in documented.items():
        assert len(body) > 40, f"{slug}: the section explains nothing"


def test_every_documented_type_is_one_the_service_answers():
    stale = set(documented_types()) - set(answered_types())
    assert stale == set(), f"docs/http-api.md explains types the service never answers: {sorted(stale)}"


def test_the_docs_name_the_uris_as_identifiers():
    text = DOC.read_text(encoding="utf-8")
    assert PROBLEM_TYPE_BASE in text
