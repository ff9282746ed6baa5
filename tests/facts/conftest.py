"""The facts area's tests (writes, extraction, reconciliation, fact reads), filed like
``services/facts/``. Each file declares the one layer it drives with a module-level
``pytestmark`` (the markers in pyproject.toml: ``domain``, ``service``, ``http``, ``adapter``), so
``pytest tests/facts -m service`` runs the use cases alone; a file with none, or two, fails
collection here."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

LAYERS = ("domain", "service", "http", "adapter")
HERE = Path(__file__).resolve().parent


def layer_problem(module: ModuleType) -> str | None:
    """Why ``module`` does not declare exactly one layer (``None`` when it does)."""
    marks = getattr(module, "pytestmark", [])
    marks = marks if isinstance(marks, list) else [marks]
    layers = [m.name for m in marks if getattr(m, "name", None) in LAYERS]
    if len(layers) == 1:
        return None
    found = ", ".join(layers) or "none"
    return f"{module.__name__} must declare exactly one layer marker of {', '.join(LAYERS)} (found: {found})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problems = set()
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and Path(str(item.path)).resolve().parent == HERE:
            problem = layer_problem(module)
            if problem:
                problems.add(problem)
    if problems:
        raise pytest.UsageError("; ".join(sorted(problems)))
