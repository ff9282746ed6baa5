"""The stack's figures in README.md and docs/deploying.md are tests/deploy/stack_figures.py's:
roles and policies per role, alarms and their metrics, the fixed monthly cost per tenant stack
(from its prices table) and the tenants an account holds. `make preflight` checks the same
blocks against the template as SAM's translator expands it."""

from __future__ import annotations

import re
import shutil

import iam_table
import stack_figures


def test_the_docs_figures_are_the_scripts():
    assert stack_figures.differences(stack_figures.blocks()) == [], \
        "run python tests/deploy/stack_figures.py --write"


def test_a_changed_figure_is_caught(tmp_path, monkeypatch):
    copies = {}
    for name, path in stack_figures.DOCS.items():
        copies[name] = tmp_path / path.name
        shutil.copy(path, copies[name])
    monkeypatch.setattr(stack_figures, "DOCS", copies)
    rendered = stack_figures.blocks()
    assert stack_figures.differences(rendered) == []
    readme = copies["README.md"]
    readme.write_text(re.sub(r"about \$[0-9.]+ with search", "about $3.56 with search", readme.read_text()))
    assert stack_figures.differences(rendered) == ["README.md: the idle-cost block differs from "
                                                   "tests/deploy/stack_figures.py's figures"]


def test_every_price_names_its_page_the_date_and_how_it_was_checked():
    for name, price in stack_figures.PRICES.items():
        assert price.source.startswith("https://aws.amazon.com/"), name
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.read) and price.checked, name
        assert price.usd > 0, name


def test_the_figures_follow_the_template():
    figs = stack_figures.compute()
    on, off = figs["with search"], figs["without search"]
    assert on.roles == len(iam_table.FUNCTIONS) and off.roles == on.roles - 1  # the index step needs search
    assert on.managed_per_role == 0 and on.inline_per_role == 1
    assert on.redrive and not off.redrive  # ProjectionRedriveSchedule is DISABLED without search
    costs = on.costs()
    assert round(costs["alarms"], 2) == round(on.alarm_metrics * 0.10, 2)
    assert on.fixed > off.fixed > 0
