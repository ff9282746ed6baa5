"""Weighted reciprocal-rank fusion with leg scores (``ranking.fusion``) and a recipe applied
over a ranking's columns (``ranking.rank``)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np
import pytest

from agent_memory.ports import SearchUnit
from agent_memory.ranking.fusion import RRF_K, STRUCTURED_LEG, Leg, best_k, candidate_depth, fuse
from agent_memory.ranking.rank import QueryFacts, rank
from agent_memory.ranking.recipes import RECIPES, RETRIEVAL_MODES
from agent_memory.ranking.rows import ranking_from_units

PLAIN = RECIPES["rrf"]


def _rows(*indices: int) -> np.ndarray:
    return np.asarray(indices, dtype=np.int64)


def test_reciprocal_rank_fusion_sums_weight_over_k_plus_rank_across_legs():
    legs = [Leg("bm25", 1.0, _rows(0, 1, 2)), Leg("vector", 1.0, _rows(1, 3, 0))]
    fused = fuse(4, legs, rrf_k=60)
    assert fused.scores.tolist() == [1 / 61 + 1 / 63, 1 / 62 + 1 / 61, 1 / 63, 1 / 62]
    assert fused.best_rank.tolist() == [1, 1, 3, 2]
    assert fused.seen.tolist() == [True, True, True, True]
    # a weight scales a leg's share; a leg of weight 0 does not count, even for "seen"
    fused = fuse(5, [Leg("bm25", 0.5, _rows(0, 1)), Leg("off", 0.0, _rows(4))], rrf_k=30)
    assert fused.scores.tolist() == [0.5 / 31, 0.5 / 32, 0.0, 0.0, 0.0]
    assert fused.seen.tolist() == [True, True, False, False, False]


def test_leg_scores_add_their_share_of_the_legs_best_times_what_rank_one_earns():
    legs = [Leg("bm25", 1.0, _rows(0, 1), np.array([0.9, 0.3])), Leg("vector", 0.5, _rows(1), np.array([0.4]))]
    fused = fuse(2, legs, rrf_k=30, score_share=2.0)
    assert fused.scores[0] == pytest.approx(1 / 31 + 2.0 / 31 * 1.0)
    assert fused.scores[1] == pytest.approx(1 / 32 + 2.0 / 31 * (0.3 / 0.9) + 0.5 / 31 + 2.0 * 0.5 / 31 * 1.0)
    # without scores (an index that reports none) or without a share, ranks alone
    ranks_only = fuse(2, [dataclasses.replace(leg, scores=None) for leg in legs], rrf_k=30, score_share=2.0)
    assert ranks_only.scores.tolist() == fuse(2, legs, rrf_k=30).scores.tolist()
    assert ranks_only.scores.tolist() == pytest.approx([1 / 31, 1 / 32 + 0.5 / 31])


def test_best_k_breaks_ties_by_best_rank_then_id_and_keeps_only_seen_candidates():
    scores = np.array([0.5, 0.5, 0.5, 0.9, 0.7])
    best = np.array([2, 1, 1, 3, 9])
    seen = np.array([True, True, True, True, False])
    ids = ["d", "c", "b", "a", "e"]
    assert best_k(scores, best, seen, ids, 3) == [(3, 0.9), (2, 0.5), (1, 0.5)]
    assert [i for i, _ in best_k(scores, best, seen, ids, 10)] == [3, 2, 1, 0]


def test_candidate_depth_is_generous_below_ten_hits_and_grows_with_k():
    assert candidate_depth(1) == 50 and candidate_depth(10) == 50 and candidate_depth(40) == 200
    assert candidate_depth(8, min_depth=20, per_k=3) == 24


def _turn(uid: str, session: str, seq: int, **kw) -> SearchUnit:
    return SearchUnit(id=uid, context_id="c", kind="turn", text=uid, session_id=session, metadata={"seq": seq}, **kw)


def test_the_plain_recipe_is_reciprocal_rank_fusion_and_nothing_else():
    """``rrf`` (a thread's semantic matches) ranks exactly by RRF(k=60): no rule moves a score."""
    units = [_turn("a", "s1", 1, role="assistant"), _turn("b", "s1", 2),
             SearchUnit(id="f", context_id="c", kind="attribute", text="f", metadata={"key": "location"})]
    by_id = {u.id: u for u in units}
    ranking = ranking_from_units([[by_id["a"], by_id["b"]], [by_id["f"], by_id["a"]]],
                                 scores=[[3.0, 1.0], [0.9, 0.1]])
    legs = [Leg("bm25", PLAIN.bm25, ranking.legs[0], ranking.leg_scores[0]),
            Leg("vector", PLAIN.vector, ranking.legs[1], ranking.leg_scores[1])]
    window = (datetime(2020, 1, 1, tzinfo=UTC), datetime(2030, 1, 1, tzinfo=UTC))
    ranked, candidates = rank(PLAIN, ranking, legs, 3, QueryFacts(frozenset({"location"}), window))
    assert candidates == 3
    assert [(ranking.ids[i], s) for i, s in ranked] == [("a", 1 / 61 + 1 / 62), ("f", 1 / 61), ("b", 1 / 62)]
    assert PLAIN.rrf_k == RRF_K and "rrf" not in RETRIEVAL_MODES  # threads' own, not a /query mode


def test_a_clear_winner_in_a_leg_outranks_a_near_tie_that_ranks_alike():
    """Two legs each rank one unit first and the other second, so by ranks alone they tie.
    The leg whose first place is a clear winner (0.9 against 0.2) decides over the leg whose
    first place is a near tie (0.50 against 0.49); a score counts as a share of its leg's best."""
    units = [_turn("clear", "s1", 1), _turn("close", "s2", 1), _turn("tail", "s3", 1)]
    by_id = {u.id: u for u in units}
    ranking = ranking_from_units([[by_id[x] for x in ("clear", "close", "tail")],
                                  [by_id[x] for x in ("close", "clear", "tail")]],
                                 scores=[[0.9, 0.2, 0.1], [0.50, 0.49, 0.1]])
    assert [s.tolist() for s in ranking.leg_scores] == [[0.9, 0.2, 0.1], [0.50, 0.49, 0.1]]
    legs = [Leg("bm25", 1.0, ranking.legs[0], ranking.leg_scores[0]),
            Leg("vector", 1.0, ranking.legs[1], ranking.leg_scores[1])]
    recipe = dataclasses.replace(RECIPES["hybrid"], neighbour_share=0.0, session_prior=0.0, time_boost=0.0)
    assert recipe.score_share > 0
    ranked, _ = rank(recipe, ranking, legs, 3)
    assert [ranking.ids[i] for i, _ in ranked] == ["clear", "close", "tail"]
    # each score as a share of its leg's best: clear 0.9/0.9 + 0.49/0.50, close 0.2/0.9 + 0.50/0.50
    gap = recipe.score_share / (recipe.rrf_k + 1) * ((1 + 0.49 / 0.50) - (0.2 / 0.9 + 1))
    assert ranked[0][1] - ranked[1][1] == pytest.approx(gap)
    # ranks alone (score_share 0, or an adapter without scores): an exact tie
    for variant, legs_ in ((dataclasses.replace(recipe, score_share=0.0), legs),
                           (recipe, [dataclasses.replace(leg, scores=None) for leg in legs])):
        ranked, _ = rank(variant, ranking, legs_, 3)
        assert ranked[0][1] == pytest.approx(ranked[1][1])


def test_the_best_tier1_fact_is_spared_the_fact_factor_and_a_hinted_key_is_lifted():
    facts = [SearchUnit(id=f"f{i}", context_id="c", kind="attribute", text=f"f{i}", metadata={"key": key})
             for i, key in enumerate(("location", "employer"))]
    ranking = ranking_from_units([facts, facts], scores=[[1.0, 1.0], [1.0, 1.0]])
    recipe = dataclasses.replace(RECIPES["hybrid"], session_prior=0.0)
    structured = Leg(STRUCTURED_LEG, recipe.structured, ranking.legs[0], np.ones(2))
    search = Leg("bm25", recipe.bm25, ranking.legs[1], ranking.leg_scores[1])
    fused = fuse(2, [structured, search], recipe.rrf_k, recipe.score_share).scores
    ranked, _ = rank(recipe, ranking, [structured, search], 2, QueryFacts(frozenset({"location"})))
    got = {ranking.ids[i]: s for i, s in ranked}
    # f0: first in the structured leg (spared x0.7) with the asked key (x2.5); f1: x0.7 only
    # (both current: hybrid's current_fact_factor is 1.0)
    assert got["f0"] == pytest.approx(fused[0] * recipe.key_hint_factor)
    assert got["f1"] == pytest.approx(fused[1] * recipe.fact_factor)
