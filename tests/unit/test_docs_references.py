"""Code comments point at docs/decisions.md sections by name, never at files outside the repo."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p for d in ("shared", "functions", "tests", "bench") for p in (ROOT / d).rglob("*.py")]


def _sections() -> set[str]:
    text = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"^## (.+)$", text, re.MULTILINE)}


def test_every_decisions_reference_names_a_section():
    sections = _sections()
    missing = []
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r'docs/decisions\.md,((?:\s*"[^"]+",?)+)', text):
            for name in re.findall(r'"([^"]+)"', m.group(1)):
                name = " ".join(name.split())  # a name may wrap across comment lines
                if name not in sections:
                    missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert not missing, missing


def test_no_reference_to_design_notes_outside_the_repo():
    pattern = re.compile(r'DESIGN[ ,]+"|\(DESIGN\b|\bspec/[\w-]+\.md')
    offenders = [str(p.relative_to(ROOT)) for p in SOURCES
                 if p.name != Path(__file__).name and pattern.search(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders
