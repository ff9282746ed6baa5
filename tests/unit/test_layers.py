"""The handlers' layer rule, which import-linter cannot check (``functions/`` is not a package).

docs/architecture.md, "Layers": functions -> presenters/http -> services -> ports <- adapters.
A handler (``functions/<area>/app.py``) parses, authorises, calls one use case and presents,
so it imports only the HTTP layer, the presenters, the composition root (``runtime``), the
services and models it names, and a few request-level helpers. It never reaches an adapter
or a cloud/model SDK itself (those are wired in ``runtime``), nor the web framework (the
HTTP layer builds responses).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted((ROOT / "functions").glob("*/app.py"))

# agent_memory modules a handler may import (a module or anything below it).
ALLOWED = (
    "agent_memory.http.api",
    "agent_memory.presenters",
    "agent_memory.runtime",
    "agent_memory.services",
    "agent_memory.models",
    # request-level helpers: domain errors, metrics, grants (verbs), multipart form parsing
    "agent_memory.kernel.errors",
    "agent_memory.observability",
    "agent_memory.access.grants",
    "agent_memory.http.multipart",
    # the MCP route's transport: the SDK's streamable HTTP around the one tool table
    "agent_memory.http.mcp_route",
)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (``import a.b`` -> a.b; ``from a import b`` -> a.b when
    ``a.b`` may be a module, else a), lazy and ``TYPE_CHECKING`` imports included."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import in a handler"
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    if top == "agent_memory":
        parts = module.split(".")
        # ``from agent_memory import http`` names agent_memory.http.api; check every prefix.
        return any(".".join(parts[:n]) == allowed or ".".join(parts[:n]).startswith(allowed + ".")
                   for n in range(2, len(parts) + 1) for allowed in ALLOWED)
    return top in sys.stdlib_module_names


def test_there_are_handlers_to_check():
    assert len(HANDLERS) >= 10, HANDLERS


@pytest.mark.parametrize("path", HANDLERS, ids=lambda p: p.parent.name)
def test_a_handler_imports_only_the_layers_below_it(path: Path):
    bad = [f"{path.relative_to(ROOT)}:{line}: {module}" for line, module in _imports(path) if not _allowed(module)]
    assert not bad, "handlers may import only http, presenters, runtime, services, models and " \
                    "request-level helpers (docs/architecture.md, Layers):\n" + "\n".join(bad)


@pytest.mark.parametrize("module", ["agent_memory.adapters.dynamodb_store", "boto3", "opensearchpy", "openai",
                                    "aws_lambda_powertools.event_handler", "agent_memory.client",
                                    "agent_memory.config"])
def test_the_rule_refuses_adapters_sdks_and_the_framework(module: str):
    assert not _allowed(module)
    assert not _allowed(f"{module}.Thing")


def test_the_rule_accepts_the_layers_below():
    assert _allowed("agent_memory.http.api")
    assert _allowed("agent_memory.presenters.threads.turn_page")
    assert _allowed("agent_memory.services.documents.ingestion.IngestionJob")
    assert _allowed("json")


def test_idempotency_keys_are_applied_in_one_place():
    """Every keyed route goes through ``http.idempotent`` (docs/architecture.md, Idempotency):
    only the HTTP layer (and the runtime, which builds the service) uses the idempotency
    service; no use case applies keys itself."""
    package = ROOT / "shared" / "agent_memory"
    users = set()
    for path in [*package.rglob("*.py"), *HANDLERS]:
        if path.name == "idempotency.py":
            continue
        for _, module in _package_imports(path):
            if module.startswith("agent_memory.services.facts.idempotency"):
                users.add(path.relative_to(ROOT).as_posix())
    # http/request_input.py checks a key's form with the service's own rule (check_key) before
    # http/api.py runs it
    assert users <= {"shared/agent_memory/runtime.py", "shared/agent_memory/http/api.py",
                     "shared/agent_memory/http/request_input.py"}, users
    assert "get_runtime().idempotency.run(" in (package / "http/api.py").read_text()


def _package_imports(path: Path) -> list[tuple[int, str]]:
    """Absolute imports of ``path`` (the package uses no relative ones)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_the_package_has_no_import_cycles():
    """No module reaches itself through imports, lazy and ``TYPE_CHECKING`` ones included
    (grimp, which import-linter runs on, sees them all): a cycle is registration by import
    order or a layer leaning on the one above it."""
    import grimp

    graph = grimp.build_graph("agent_memory", cache_dir=None)
    cycles = [(module, other) for module in sorted(graph.modules)
              for other in graph.find_modules_directly_imported_by(module)
              if other != module and graph.chain_exists(importer=other, imported=module)]
    assert cycles == []
