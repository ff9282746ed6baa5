"""Store and search calls per request on the deployed code path stay within what
bench/round_trips.py measured (issue 30): a change that adds a DynamoDB read or a search
request to a hot route fails here. Counted, not timed; warm container, no Idempotency-Key."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# route: (DynamoDB calls, search requests) at most, warm. /facts meets its goal (5); /query
# (goal 3) reads the named entities, the self entity's attributes and relations (tier 1) and
# the recent-units partition; /chat (goal 8) adds the instructions, the response cache, the
# trace rows, the entity names for the extraction prompt and the commit (docs/benchmarks.md).
BUDGET = {"POST /facts": (5, 0), "POST /query": (4, 1), "POST /chat": (13, 1)}


def _bench():
    spec = importlib.util.spec_from_file_location("bench_round_trips_under_test", REPO / "bench" / "round_trips.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_hot_routes_stay_within_their_round_trips():
    bench = _bench()
    routes = [r for r in bench.ROUTES if r[0] in BUDGET]
    results = bench.measure(repeat=1, routes=routes)
    for label, (dynamodb, search) in BUDGET.items():
        warm = results[label]["warm"][0]
        assert warm.status == 200, label
        assert len(warm.dynamodb) <= dynamodb, (label, warm.dynamodb)
        assert len(warm.search) <= search, (label, warm.search)
        assert not warm.other_aws, (label, warm.other_aws)


def test_a_write_reads_each_entity_partition_once():
    """The speaker's name and the slots a write touches come from one query of the partition."""
    bench = _bench()
    results = bench.measure(repeat=1, routes=[r for r in bench.ROUTES if r[0] == "POST /facts"])
    warm = results["POST /facts"]["warm"][0]
    assert sorted(warm.dynamodb) == ["BatchGetItem", "GetItem", "Query", "Query", "TransactWriteItems"]
