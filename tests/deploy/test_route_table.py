"""README.md's route table is tests/deploy/route_table.py's, from openapi.yaml and template.yaml;
docs/architecture.md's table names every handler under functions/, and only those."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import route_table
import yaml


def test_the_readme_route_table_is_the_scripts():
    assert route_table.current() == route_table.render(), "run python tests/deploy/route_table.py --write"


def test_the_table_names_every_method_and_path_of_openapi_yaml():
    spec = yaml.safe_load((route_table.REPO / "openapi.yaml").read_text(encoding="utf-8"))
    listed = {(m, p) for _, routes in route_table.rows() for m, p in routes}
    every = {(m.upper(), p) for p, item in spec["paths"].items() for m in route_table.METHODS if m in item}
    assert listed == every


def test_a_route_left_out_is_caught(monkeypatch):
    rows = route_table.rows()
    area, routes = rows[0]
    monkeypatch.setattr(route_table, "rows", lambda: [(area, routes[1:]), *rows[1:]])
    assert route_table.current() != route_table.render()


# --- docs/architecture.md's route -> handler -> use case table, checked against functions/ ---

ARCHITECTURE = route_table.REPO / "docs" / "architecture.md"
TABLE_HEADING = "## Route -> handler -> use case -> presenter"
RESOLVER_METHODS = {"get", "post", "put", "patch", "delete", "route"}


def _resolver_call(node: ast.AST) -> bool:
    """``app.get(...)`` and its kin: a route registered on the function's resolver."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in RESOLVER_METHODS and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "app")


def code_handlers() -> dict[str, set[str]]:
    """area -> the functions its ``app.py`` registers as routes (a lambda registered for
    several paths counts as the function it calls), or ``{"lambda_handler"}`` for a function
    that no route reaches."""
    found: dict[str, set[str]] = {}
    for app_py in sorted((route_table.REPO / "functions").glob("*/app.py")):
        tree = ast.parse(app_py.read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(_resolver_call(d) for d in node.decorator_list):
                names.add(node.name)
            elif (isinstance(node, ast.Call) and _resolver_call(node.func) and node.args
                  and isinstance(node.args[0], ast.Lambda) and isinstance(node.args[0].body, ast.Call)
                  and isinstance(node.args[0].body.func, ast.Name)):
                names.add(node.args[0].body.func.id)
        found[app_py.parent.name] = names or {"lambda_handler"}
    return found


def documented_handlers() -> list[tuple[str, str]]:
    """(area, function) for each handler the table names: ``area:function``, and bare names
    after one (``area:a``, ``b``) in the same area; ``via ...`` notes are not handlers."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index(TABLE_HEADING):]
    section = section[:section.index("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| route")]
    named: list[tuple[str, str]] = []
    for row in rows:
        cell = re.sub(r"\s+via `[^`]*`", "", row.split(" | ")[1])
        area = None
        for token in re.findall(r"`([^`]+)`", cell):
            if ":" in token:
                area, _, token = token.partition(":")
            elif "." in token:  # a handler outside functions/: ``http.gateway.local_upload``
                module, _, token = token.rpartition(".")
                area = f"agent_memory.{module}"
            if area is None or not token.isidentifier():
                named.append(("?", token))  # a handler the table names in no form this test reads
                continue
            named.append((area, token))
    return named


def _defines(module: str, name: str) -> bool:
    path = route_table.REPO / "shared" / Path(*module.split(".")).with_suffix(".py")
    return path.is_file() and any(isinstance(node, ast.FunctionDef) and node.name == name
                                  for node in ast.parse(path.read_text(encoding="utf-8")).body)


def left_out(code: dict[str, set[str]], documented: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Handlers under functions/ the table does not name."""
    return sorted((area, name) for area, names in code.items() for name in names if (area, name) not in documented)


def unknown(code: dict[str, set[str]], documented: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Handlers the table names that neither functions/ nor the named module has."""
    return sorted((area, name) for area, name in documented if name not in code.get(area, ())
                  and not (area.startswith("agent_memory.") and _defines(area, name)))


def test_the_architecture_table_names_every_handler_in_functions():
    missing = left_out(code_handlers(), documented_handlers())
    assert not missing, f"handlers docs/architecture.md's route table leaves out: {missing}"


def test_every_handler_the_architecture_table_names_exists():
    stray = unknown(code_handlers(), documented_handlers())
    assert not stray, f"docs/architecture.md's route table names handlers functions/ lacks: {stray}"


def test_a_handler_left_out_or_misnamed_is_caught():
    code, documented = code_handlers(), documented_handlers()
    assert left_out(code, documented[1:]) == [documented[0]]
    assert unknown(code, [*documented, ("sessions", "no_such_handler"), ("agent_memory.http.gateway", "nope")]) == \
        [("agent_memory.http.gateway", "nope"), ("sessions", "no_such_handler")]
    assert code["projector"] == {"lambda_handler"} and {"_get_fact", "list_uncertainty"} <= code["entities"]
