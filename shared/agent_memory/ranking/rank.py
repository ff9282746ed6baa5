"""A recipe applied: fusion of the legs, then the ranking rules in their order, then the cut."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from agent_memory.ports import RowRanking
from agent_memory.ranking import rules
from agent_memory.ranking.fusion import STRUCTURED_LEG, Leg, best_k, fuse
from agent_memory.ranking.recipes import SearchRecipe


@dataclass(frozen=True)
class QueryFacts:
    """What the rules know of the query, as plain values (the caller analyses it):
    ``key_hints``, the attribute keys and relation labels it asks about ("where do I live" ->
    location); ``window``, the ``[start, end)`` its time phrase names; ``stale``, the ids of turns whose facts all no
    longer hold at the query's instant, and ``supports``, of turns that state a value of an
    asked key holding then (``rules.said_factor``)."""

    key_hints: frozenset[str] = frozenset()
    window: tuple[datetime, datetime] | None = None
    stale: frozenset[str] = frozenset()
    supports: frozenset[str] = frozenset()


def rank(recipe: SearchRecipe, ranking: RowRanking, legs: Sequence[Leg], k: int,
         query: QueryFacts = QueryFacts()) -> tuple[list[tuple[int, float]], int]:
    """The best ``k`` candidates (indices into ``ranking``) with their scores, and how many
    candidates there were. In order: fusion, the neighbour share, the factors for what a unit
    is, the key hint, what the turns' facts say (superseded, supporting) and the time window,
    then the session prior; last, tier 1's answer (the structured leg's first row, when its key
    is one the question asks for) leads."""
    fused = fuse(len(ranking.ids), legs, recipe.rrf_k, recipe.score_share)
    scores, seen = fused.scores, fused.seen
    kind = ranking.kind
    sessions = rules.session_codes(ranking.session_id)
    if recipe.neighbour_share:
        scores = rules.share_with_neighbours(scores, seen & (kind == "turn"), ranking.seq, sessions,
                                             recipe.neighbour_share, recipe.neighbour_window,
                                             recipe.neighbour_decay, recipe.neighbour_strong)
    spared = np.asarray([leg.rows[0] for leg in legs if leg.name == STRUCTURED_LEG and leg.rows.size],
                        dtype=np.int64)
    factor = rules.kind_factor(kind, ranking.role, ranking.current, spared, assistant=recipe.assistant_factor,
                               current_fact=recipe.current_fact_factor, fact=recipe.fact_factor)
    if query.key_hints:
        factor = factor * rules.key_hint_factor(kind, ranking.key, query.key_hints, recipe.key_hint_factor)
    if query.stale or query.supports:
        factor = factor * rules.said_factor(ranking.ids, query.stale, query.supports,
                                            superseded=recipe.superseded_factor, support=recipe.support_factor)
    if recipe.time_boost and query.window is not None:
        start, end = query.window
        factor = factor * rules.time_factor(ranking.occurred_at, seen, start, end, recipe.time_slack_days,
                                            recipe.time_boost)
    scores = scores * factor
    if recipe.session_prior:
        scores = rules.session_prior(scores, seen, sessions, recipe.session_prior)
    if recipe.lead_answer and query.key_hints and spared.size:
        answer = int(spared[0])
        if kind[answer] in ("attribute", "relation") and ranking.key[answer] in query.key_hints:
            scores = rules.lead(scores, seen, answer)
    return best_k(scores, fused.best_rank, seen, ranking.ids, k), int(np.count_nonzero(seen))
