"""Ranked search for callers that need neither tier-1 reads nor entity legs (a thread's semantic
matches): a recipe's BM25 and vector legs come from the index, the fusion and rules from here.
Indexes answer single legs only (``SearchIndex.search``, ``SearchIndex.rank_rows``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.ports import RowLeg, SearchFilter, SearchHit, SearchMode
from agent_memory.ranking.fusion import Leg, candidate_depth
from agent_memory.ranking.rank import rank

if TYPE_CHECKING:
    from agent_memory.ports import SearchIndex
    from agent_memory.ranking.recipes import SearchRecipe


def search(index: SearchIndex, query: str, flt: SearchFilter, recipe: SearchRecipe, k: int = 10) -> list[SearchHit]:
    """The best ``k`` units for ``query`` under ``flt``, best first, with their fused scores:
    the recipe's ``bm25`` and ``vector`` legs (a weight of 0 skips one), each
    ``candidate_depth`` deep, from one ``rank_rows`` call, ranked by ``rank`` with the recipe.
    The query brings no key hints or time window: those are the retrieval service's."""
    if k <= 0:
        return []
    depth = candidate_depth(k, recipe.min_depth, recipe.depth_per_k)
    named: list[tuple[SearchMode, float]] = [(mode, weight) for mode, weight in
                                             (("bm25", recipe.bm25), ("vector", recipe.vector)) if weight > 0]
    if not named:
        return []
    ranking = index.rank_rows(flt, [RowLeg(query, mode, depth) for mode, _ in named])
    scores = ranking.leg_scores
    legs = [Leg(mode, weight, ranking.legs[j], scores[j] if scores is not None else None)
            for j, (mode, weight) in enumerate(named)]
    ranked, _ = rank(recipe, ranking, legs, k)
    units = ranking.decode([i for i, _ in ranked])
    return [SearchHit(unit, score) for unit, (_, score) in zip(units, ranked, strict=True) if unit is not None]
