"""ranking.visibility: the SearchFilter rules for units held in memory, and their vector order."""

from __future__ import annotations

import numpy as np

from agent_memory.ports import SearchFilter, SearchUnit
from agent_memory.ranking.visibility import nearest_visible, unit_visible

NOW = "2026-06-01T00:00:00Z"


def unit(uid: str, **kw) -> SearchUnit:
    return SearchUnit(id=uid, context_id="c", kind=kw.pop("kind", "turn"), text=uid, **kw)


def vec(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_filter_rules_hold_for_units_in_memory():
    flt = SearchFilter(context_id="c", kinds=["turn"], exclude_ids=["gone"])
    assert unit_visible(unit("a"), flt, NOW)
    assert not unit_visible(unit("b", kind="chunk"), flt, NOW)
    assert not unit_visible(unit("gone"), flt, NOW)
    assert not unit_visible(SearchUnit(id="x", context_id="other", kind="turn", text="x"), flt, NOW)
    assert not unit_visible(unit("old", valid_until="2026-01-01T00:00:00Z"), flt, NOW)
    as_of = SearchFilter(context_id="c", as_of="2025-12-01T00:00:00Z")
    assert unit_visible(unit("old", valid_until="2026-01-01T00:00:00Z"), as_of, NOW)
    readers = unit("acl", acl_readers=["alice"])
    assert not unit_visible(readers, SearchFilter(context_id="c", principals=["bob"]), NOW)
    assert unit_visible(readers, SearchFilter(context_id="c", principals=["alice"]), NOW)


def test_nearest_visible_ranks_admitted_units_by_cosine():
    q = vec(1, 0)
    units = [(unit("far"), vec(0, 1)), (unit("near"), vec(1, 0.1)), (unit("mid"), vec(1, 1)),
             (unit("hidden", kind="chunk"), vec(1, 0))]
    got = nearest_visible(units, q, SearchFilter(context_id="c", kinds=["turn"]), NOW, depth=2)
    assert [u.id for u, _ in got] == ["near", "mid"]
    assert got[0][1] > got[1][1] and abs(got[1][1] - 2 ** -0.5) < 1e-6


def test_nearest_visible_keeps_the_last_vector_of_a_repeated_unit_and_ignores_a_zero_query():
    units = [(unit("a"), vec(0, 1)), (unit("b"), vec(1, 1)), (unit("a"), vec(1, 0))]
    got = nearest_visible(units, vec(1, 0), SearchFilter(context_id="c"), NOW, depth=5)
    assert [u.id for u, _ in got] == ["a", "b"] and abs(got[0][1] - 1.0) < 1e-6
    assert nearest_visible(units, np.zeros(2, dtype=np.float32), SearchFilter(context_id="c"), NOW, 5) == []
