"""Each scenario of ``table.SCENARIOS`` through the local server (on each record store, the
offline model), in a fresh context."""

from __future__ import annotations

import re

import pytest

from tests.conftest import HttpApi
from tests.scenarios.table import SCENARIOS


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60]


@pytest.mark.parametrize("store_kind", ["sqlite", "dynamodb"], indirect=True)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[_slug(s.name) for s in SCENARIOS])
def test_scenario(client, scenario):
    api = HttpApi(client)
    ctx = f"/api/v1/scn{SCENARIOS.index(scenario)}"
    seen: dict = {}
    for n, step in enumerate(scenario.steps, start=1):
        try:
            step.run(api, ctx, seen)
        except AssertionError as exc:
            raise AssertionError(f"{scenario.name}, step {n} ({type(step).__name__}): {exc}") from None


def test_scenario_names_are_unique():
    assert len({_slug(s.name) for s in SCENARIOS}) == len(SCENARIOS)
