"""Store and search calls per request on the deployed code path stay within what
bench/round_trips.py measured (issue 30): a change that adds a DynamoDB read or a search
request to a hot route fails here. Counted, not timed; warm container, no Idempotency-Key."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# route: (DynamoDB round trips, search requests) at most, warm: each meets its goal. /query
# reads the named entities, then the self entity's attributes and relations at once (tier 1),
# then the recent units (docs/benchmarks.md says why each stays). Calls run at once
# (``kernel.fan_out``: tier 1's partitions, the recent units' shard reads, 4 or 8 in a 5-minute
# bucket's first minute) are one round.
BUDGET = {"POST /facts": (3, 0), "POST /query": (3, 1), "POST /chat": (6, 1)}


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
        assert len(warm.rounds()) <= dynamodb, (label, warm.dynamodb)
        recent = warm.dynamodb.count(bench.RECENT_READ)
        assert recent in (0, 4, 8), (label, warm.dynamodb)  # every shard, of one or two buckets
        assert len(warm.search) <= search, (label, warm.search)
        assert not warm.other_aws, (label, warm.other_aws)


def test_a_write_reads_each_entity_partition_once():
    """The speaker's name and the slots a write touches come from one query of the partition."""
    bench = _bench()
    results = bench.measure(repeat=1, routes=[r for r in bench.ROUTES if r[0] == "POST /facts"])
    warm = results["POST /facts"]["warm"][0]
    # the speaker's partition and the entity list (which answers the entity reads too), then
    # the commit: no session read for a new session, no batch read of the entities
    assert sorted(warm.dynamodb) == ["Query", "Query", "TransactWriteItems"]


def test_a_chat_turn_reads_each_partition_once_and_commits_its_traces_with_its_turns():
    bench = _bench()
    results = bench.measure(repeat=1, routes=[r for r in bench.ROUTES if r[0] == "POST /chat"])
    warm = results["POST /chat"]["warm"][0]
    # entity list, self attributes and relations (at once), recent units, instructions,
    # response cache with its write mark (at once), then one transaction: the turns, the
    # extracted facts and both trace rows
    assert sorted(warm.rounds()) == ["GetItem + Query"] + ["Query"] * 3 + ["Query[recent-units]",
                                                                           "TransactWriteItems"]
    assert warm.dynamodb.count("Query") == 5


def test_a_query_reads_tier_one_partitions_at_once():
    bench = _bench()
    results = bench.measure(repeat=1, routes=[r for r in bench.ROUTES if r[0] == "POST /query"])
    warm = results["POST /query"]["warm"][0]
    # the named entities, the self entity's attribute and relation partitions in one round,
    # then the recent units
    assert warm.rounds() == ["BatchGetItem", "Query", "Query[recent-units]"]
    assert warm.dynamodb.count("Query") == 2


def test_rounds_follow_the_fan_outs_the_calls_ran_in():
    bench = _bench()
    a, b = (7, 0), (7, 1)
    calls = [("GetItem", ()), ("Query", (a,)), ("Query", (b,)), ("Query", (a,)),  # a reads two pages
             ("Query[recent-units]", ((9, 0),)), ("Query[recent-units]", ((9, 1),)), ("PutItem", ())]
    assert bench._rounds(calls) == [["GetItem"], ["Query", "Query"], ["Query"],
                                    ["Query[recent-units]", "Query[recent-units]"], ["PutItem"]]
    nested = [("Query", ((3, 0),)), ("Query", ((3, 1), (4, 0))), ("Query", ((3, 1), (4, 1)))]
    assert bench._rounds(nested) == [["Query", "Query", "Query"]]
    assert bench._rounds([("Query", ()), ("Query", ())]) == [["Query"], ["Query"]]
