"""The kernel is the bottom floor: ``.importlinter``'s kernel contract forbids it every other
module of ``agent_memory`` but the ports, and this keeps that list whole as modules are added."""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "agent_memory"
# What the kernel may import: itself, and the ports' plain record types below it.
BELOW_OR_SELF = {"agent_memory.kernel", "agent_memory.ports"}


def _top_level_modules() -> set[str]:
    names = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    names |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return {f"agent_memory.{name}" for name in names}


def test_the_kernel_contract_forbids_every_module_above_the_kernel():
    linter = configparser.ConfigParser()
    linter.read(ROOT / ".importlinter")
    contract = linter["importlinter:contract:kernel"]
    assert contract["source_modules"].split() == ["agent_memory.kernel"]
    assert "ignore_imports" not in contract
    forbidden = set(contract["forbidden_modules"].split())
    assert forbidden == _top_level_modules() - BELOW_OR_SELF
