"""The embedded index's persisted views (``adapters/embedded/view_snapshots.py``) across crashes: a
view loaded from its snapshot after a process was killed holds exactly the units SQLite
holds, in the state SQLite holds them, and a snapshot that cannot be read is rebuilt from
SQLite, saying so in the log."""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from agent_memory.adapters.embedded import view_snapshots
from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
from agent_memory.adapters.embedders import HashingEmbedder
from agent_memory.ports import SearchFilter, SearchUnit
from tests.conftest import REPO

CTX = "ctx-snapshots"
pytestmark = pytest.mark.timeout(120)


def unit(i: int, text: str, revision: int = 1) -> SearchUnit:
    return SearchUnit(id=f"u{i:04d}", context_id=CTX, kind="turn", text=text, revision=revision,
                      role="user", session_id=f"s{i % 3}")


def open_index(path: Path) -> EmbeddedSearchIndex:
    return EmbeddedSearchIndex(path, HashingEmbedder(dimension=64), snapshot_min_rows=10)


def stored(index: EmbeddedSearchIndex) -> dict[str, str]:
    """What SQLite holds: unit id -> indexed text."""
    return dict(index._db.execute("SELECT id, text FROM units WHERE context_id = ?", (CTX,)).fetchall())


def assert_view_matches_sqlite(index: EmbeddedSearchIndex) -> None:
    """The context's view (as the index loads it) against a rebuild from SQLite: the same
    units, the same vectors and the same postings for each."""
    view = index._view(CTX)
    fresh = index._build_view(CTX)
    live = {uid: r for uid, r in view.row_of.items() if view.alive[r]}
    assert set(live) == set(stored(index)) == set(fresh.row_of)
    for uid, r in live.items():
        f = fresh.row_of[uid]
        assert np.array_equal(view.matrix[r], fresh.matrix[f]), uid
        assert view.pks[r] == fresh.pks[f] and view.row_of_pk[int(view.pks[r])] == r
        assert view.prints[r] == fresh.prints[f], uid
        assert view.kind_codes.names()[view.kind[r]] == fresh.kind_codes.names()[fresh.kind[f]]
        assert view.session_codes.names()[view.session[r]] == fresh.session_codes.names()[fresh.session[f]]
        if view.terms is not None:
            assert view.terms.counts(r) == fresh.terms.counts(f), uid
    if view.terms is not None:
        assert (len(view.terms), view.terms.total_length) == (len(fresh.terms), fresh.terms.total_length)
        for term in ("alpha", "omega", "common", "w1", "w7", "w23", "step3"):
            assert bm25_by_id(view, term) == pytest.approx(bm25_by_id(fresh, term)), term


def bm25_by_id(view, term: str) -> dict[str, float]:
    rows, scores = view.terms.scores([term])
    return {view.ids[r]: s for r, s in zip(rows.tolist(), scores.tolist(), strict=True)}


def found(index: EmbeddedSearchIndex, query: str, mode: str = "bm25") -> set[str]:
    return {h.unit.id for h in index.search(query, SearchFilter(context_id=CTX, admin=True), k=500, mode=mode)}


CHILD = textwrap.dedent("""
    import json, os, signal, sys
    from agent_memory.adapters.embedded import view_snapshots
    from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
    from agent_memory.adapters.embedders import HashingEmbedder
    from agent_memory.ports import SearchFilter, SearchUnit

    path, plan = sys.argv[1], json.loads(sys.argv[2])
    if plan.get("die_after_snapshot_files"):
        real = view_snapshots.write
        def write_then_die(*a, **kw):
            real(*a, **kw)
            os.kill(os.getpid(), signal.SIGKILL)  # files on disk, snapshot never registered
        view_snapshots.write = write_then_die
    index = EmbeddedSearchIndex(path, HashingEmbedder(dimension=64), snapshot_min_rows=10)
    index.search("alpha", SearchFilter(context_id="ctx-snapshots", admin=True), k=5, mode="bm25")
    index.delete("ctx-snapshots", plan["delete"])
    index.upsert([SearchUnit(id=uid, context_id="ctx-snapshots", kind="turn", text=text, revision=2,
                             role="user", session_id="s9") for uid, text in plan["write"]])
    if plan.get("snapshot"):
        index._save_view(index._view("ctx-snapshots"))
    os.kill(os.getpid(), signal.SIGKILL)  # no close: whatever is on disk now is what a restart finds
""")


def run_child(path: Path, plan: dict) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "shared"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(plan)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr


def seeded(path: Path) -> None:
    index = open_index(path)
    index.upsert([unit(i, f"alpha word{i} common") for i in range(60)])
    assert len(found(index, "alpha")) == 60  # the first search builds the view and persists it
    assert view_snapshots.registered(index._db, CTX) is not None
    index.close()


@pytest.mark.parametrize("plan", [
    {},
    {"die_after_snapshot_files": True},
    {"snapshot": True},
], ids=["killed-after-writes", "killed-between-snapshot-files-and-registration", "killed-after-a-snapshot"])
def test_a_killed_process_leaves_no_unit_in_the_view_that_sqlite_does_not_hold(tmp_path, plan):
    path = tmp_path / "search.sqlite3"
    seeded(path)
    deleted = [f"u{i:04d}" for i in range(0, 20)]
    rewritten = [f"u{i:04d}" for i in range(20, 30)]
    added = [f"u{i:04d}" for i in range(100, 105)]
    run_child(path, {**plan, "delete": deleted,
                     "write": [(uid, f"omega {uid} common") for uid in rewritten + added]})

    index = open_index(path)
    assert set(stored(index)) == {f"u{i:04d}" for i in range(20, 60)} | set(added)
    alpha, omega, common = found(index, "alpha"), found(index, "omega"), found(index, "common")
    assert alpha == {f"u{i:04d}" for i in range(30, 60)}
    assert omega == set(rewritten) | set(added)
    assert common == set(stored(index))
    assert found(index, "alpha word3", mode="vector") <= set(stored(index))
    assert_view_matches_sqlite(index)
    index.close()


def test_an_unreadable_snapshot_is_rebuilt_from_sqlite_and_the_log_says_so(tmp_path, caplog):
    path = tmp_path / "search.sqlite3"
    seeded(path)
    index = open_index(path)
    _, name = view_snapshots.registered(index._db, CTX)
    with open(os.path.join(index._snapshot_root, name, "matrix.npy"), "r+b") as f:
        f.truncate(200)  # a torn file
    with caplog.at_level(logging.INFO, logger="agent_memory.embedded_search"):
        assert len(found(index, "alpha")) == 60
    assert "rebuilding it from SQLite" in caplog.text
    assert view_snapshots.registered(index._db, CTX)[1] != name  # the rebuild was persisted again
    assert_view_matches_sqlite(index)
    index.close()


def test_views_restored_at_random_points_match_a_rebuild(tmp_path):
    """Writes, deletes, snapshots, LRU evictions and abandoned processes (an index dropped
    without ``close``) in a random order: every view loaded from disk equals a rebuild."""
    rng = random.Random(64)
    path = tmp_path / "search.sqlite3"
    index = open_index(path)
    revision = 1
    for step in range(40):
        op = rng.choice(["write", "write", "delete", "search", "snapshot", "abandon", "evict"])
        if op == "write":
            revision += 1
            ids = rng.sample(range(200), rng.randint(1, 30))
            index.upsert([unit(i, f"w{rng.randint(0, 40)} w{rng.randint(0, 40)} step{step}", revision) for i in ids])
        elif op == "delete":
            index.delete(CTX, [f"u{i:04d}" for i in rng.sample(range(200), rng.randint(1, 20))])
        elif op == "search":
            assert found(index, f"w{rng.randint(0, 40)}") <= set(stored(index))
        elif op == "snapshot" and CTX in index._views:
            index._save_view(index._views[CTX])
        elif op == "evict" and CTX in index._views:
            index._save_if_changed(index._views.pop(CTX))
        elif op == "abandon":
            index = open_index(path)  # the old object is never closed, as after kill -9
            if len(stored(index)) >= index.snapshot_min_rows:
                assert_view_matches_sqlite(index)
    index.close()
    index = open_index(path)
    assert_view_matches_sqlite(index)
    index.close()


def test_a_restored_view_compacts_to_the_same_postings(tmp_path):
    path = tmp_path / "search.sqlite3"
    seeded(path)
    index = open_index(path)
    index.delete(CTX, [f"u{i:04d}" for i in range(0, 60, 3)])
    index.upsert([unit(i, f"omega again {i}", revision=3) for i in range(1, 60, 3)])
    view = index._view(CTX)
    assert view.dead
    view._compact()  # restored base postings renumbered with the rest
    assert view.dead == 0
    assert_view_matches_sqlite(index)
    index.close()
