"""tests/facts/ files each name the one layer they drive (tests/facts/conftest.py refuses to
collect otherwise): the check itself, and every file there as written."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import pytest

from tests.facts.conftest import LAYERS, layer_problem

FACTS = Path(__file__).resolve().parents[1] / "facts"


def _module(marks: object) -> ModuleType:
    module = ModuleType("tests.facts.test_example")
    if marks is not None:
        module.pytestmark = marks
    return module


@pytest.mark.parametrize("marks", [pytest.mark.service, [pytest.mark.http, pytest.mark.parametrize("x", [1])]])
def test_one_layer_is_accepted(marks):
    assert layer_problem(_module(marks)) is None


@pytest.mark.parametrize("marks", [None, [], [pytest.mark.service, pytest.mark.http], pytest.mark.over_http])
def test_no_layer_or_two_is_refused(marks):
    assert "exactly one layer marker" in layer_problem(_module(marks))


def test_every_facts_test_file_declares_one_layer_and_pyproject_registers_it():
    pyproject = (FACTS.parents[1] / "pyproject.toml").read_text()
    files = sorted(FACTS.glob("test_*.py"))
    assert files
    for path in files:
        tree = ast.parse(path.read_text())
        marks = [ast.unparse(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(getattr(t, "id", None) == "pytestmark" for t in n.targets)]
        assert len(marks) == 1 and marks[0] in {f"pytest.mark.{layer}" for layer in LAYERS}, path.name
    for layer in LAYERS:
        assert f'"{layer}: ' in pyproject, layer
