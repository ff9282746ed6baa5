"""Recent units on time-bucketed, sharded keys: writes spread over the shards, a search
range-reads only the rows inside the refresh window (never an expired row, never a row twice)
and at most ``MAX_CANDIDATES`` of them."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from agent_memory.adapters import recent_units as ru
from agent_memory.adapters.sqlite_store import SQLiteRecordStore
from agent_memory.ports import SearchUnit


class Reading:
    """Counts the rows a search reads, and the partitions it reads them from."""

    def __init__(self, inner):
        self.inner, self.rows, self.pks = inner, 0, Counter()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def query(self, pk, **kw):
        page = self.inner.query(pk, **kw)
        self.rows += len(page.records)
        self.pks[pk] += 1
        return page


def units(n: int, start: int = 0) -> tuple[list[SearchUnit], np.ndarray]:
    us = [SearchUnit(id=f"turn_{i:05d}", context_id="acme", kind="turn", text=f"text {i}") for i in range(start, start + n)]
    return us, np.ones((n, 4), dtype=np.float32)


@pytest.fixture
def store(tmp_path):
    return Reading(SQLiteRecordStore(tmp_path / "records.db"))


def test_notes_spread_over_the_shards_of_the_current_bucket(store):
    now = [1_000_000.0]
    recent = ru.RecentUnits(store, clock=lambda: now[0])
    recent.note(*units(400))
    bucket = int(now[0] // ru.BUCKET_S)
    per_shard = [len(store.inner.query(ru.recent_pk("acme", "default", bucket, s), limit=500).records)
                 for s in range(ru.SHARDS)]
    assert sum(per_shard) == 400 and min(per_shard) > 400 / ru.SHARDS / 2  # no shard takes them all


def test_a_search_reads_only_rows_inside_the_window(store):
    now = [1_000_000.0]
    recent = ru.RecentUnits(store, clock=lambda: now[0])
    recent.note(*units(50))
    now[0] += ru.RECENT_WINDOW_S + 1  # those have expired (DynamoDB has not deleted them yet)
    recent.note(*units(30, start=50))
    store.rows = 0
    found = recent.candidates("acme", "default")
    assert sorted(u.id for u, _ in found) == [f"turn_{i:05d}" for i in range(50, 80)]
    assert store.rows == 30  # the 50 expired rows were never read
    now[0] += ru.RECENT_WINDOW_S + 1
    store.rows = 0
    assert recent.candidates("acme", "default") == [] and store.rows == 0


def test_a_window_across_a_bucket_boundary_reads_both_buckets(store):
    boundary = 2_000 * ru.BUCKET_S
    now = [boundary - 10.0]
    recent = ru.RecentUnits(store, clock=lambda: now[0])
    recent.note(*units(5))
    now[0] = boundary + 10.0
    recent.note(*units(5, start=5))
    store.pks.clear()
    assert len(recent.candidates("acme", "default")) == 10
    assert len(store.pks) == 2 * ru.SHARDS and max(store.pks.values()) == 1  # each key once
    now[0] = boundary + ru.RECENT_WINDOW_S + 20  # the window lies inside one bucket
    store.pks.clear()
    recent.candidates("acme", "default")
    assert len(store.pks) == ru.SHARDS


def test_one_search_reads_at_most_max_candidates(store):
    now = [1_000_000.0]
    recent = ru.RecentUnits(store, clock=lambda: now[0])
    for start in range(0, 2400, 400):
        now[0] += 1
        recent.note(*units(400, start=start))
    store.rows = 0
    found = recent.candidates("acme", "default")
    assert len(found) <= ru.MAX_CANDIDATES and store.rows <= ru.MAX_CANDIDATES
    assert len(found) >= ru.MAX_CANDIDATES - ru.SHARDS
    newest = {f"turn_{i:05d}" for i in range(2000, 2400)}
    assert newest <= {u.id for u, _ in found}  # the newest notes come first


def test_a_unit_noted_twice_is_kept_once_its_newest_copy(store):
    now = [1_000_000.0]
    recent = ru.RecentUnits(store, clock=lambda: now[0])
    old, vec = units(1)
    recent.note(old, vec)
    now[0] += 2
    new = [SearchUnit(id=old[0].id, context_id="acme", kind="turn", text="rewritten", revision=2)]
    recent.note(new, vec)
    found = recent.candidates("acme", "default")
    assert [(u.id, u.text) for u, _ in found] == [(old[0].id, "rewritten")]
