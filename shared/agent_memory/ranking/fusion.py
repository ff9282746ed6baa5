"""Weighted reciprocal-rank fusion: ranked legs of candidates become one score per candidate.

Each leg adds ``weight / (rrf_k + rank)`` to its candidates and, with a ``score_share``, its
own score of each as a share of the leg's best (``rules.share_of_best``) x ``score_share`` x
what rank 1 earns: ranks say where a candidate stands, scores whether the top is a clear
winner or a near tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agent_memory.ranking.rules import share_of_best

#: The reciprocal-rank constant of plain fusion (Cormack, Clarke and Buettcher, 2009).
RRF_K = 60

#: The name of the leg of tier-1 structured reads: its first row is the fact tier 1 answers with.
STRUCTURED_LEG = "structured"


def candidate_depth(k: int, min_depth: int = 50, per_k: int = 5) -> int:
    """How many candidates each leg takes for ``k`` hits: generous, so fusion and the rules have
    room below the ``k`` kept."""
    return max(min_depth, per_k * k)


@dataclass
class Leg:
    """One ranked list: ``rows`` are candidate indices (into a ``RowRanking``), best first, each
    at most once; ``scores`` the leg's own score of each (higher is better, comparable only
    within the leg), or ``None`` when the index reports none (ranks alone then)."""

    name: str
    weight: float
    rows: np.ndarray
    scores: np.ndarray | None = None


@dataclass
class Fused:
    """The fusion of ``n`` candidates: ``scores``, each one's best 1-based rank in any leg
    (``best_rank``, the first tie-break), and ``seen`` (in a leg that counts)."""

    scores: np.ndarray
    best_rank: np.ndarray
    seen: np.ndarray


def fuse(n: int, legs: Sequence[Leg], rrf_k: int = RRF_K, score_share: float = 0.0) -> Fused:
    """Weighted reciprocal-rank fusion of ``legs`` over ``n`` candidates; a leg of weight 0 or
    less takes no part (its candidates are not ``seen`` through it)."""
    scores = np.zeros(n)
    best = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    for leg in legs:
        weight = leg.weight
        if weight <= 0 or not leg.rows.size:
            continue
        # A candidate is in a leg at most once, so plain fancy indexing adds correctly and
        # costs a fraction of ``np.add.at``.
        rows = leg.rows
        ranks = np.arange(1, rows.size + 1)
        gained = weight / (rrf_k + ranks)
        if score_share and leg.scores is not None:
            gained += score_share * weight / (rrf_k + 1) * share_of_best(leg.scores)
        scores[rows] += gained
        best[rows] = np.minimum(best[rows], ranks)
        seen[rows] = True
    return Fused(scores, best, seen)


def best_k(scores: np.ndarray, best_rank: np.ndarray, seen: np.ndarray, ids: Sequence[str],
           k: int) -> list[tuple[int, float]]:
    """The best ``k`` of the ``seen`` candidates as ``(index, score)``, best first; ties go to
    the better best rank, then the smaller id, so the order is deterministic."""
    cand = np.flatnonzero(seen)
    if cand.size > k:  # every candidate tied with the k-th score stays for the tie-break
        kth = np.partition(scores[cand], cand.size - k)[cand.size - k]
        cand = cand[scores[cand] >= kth]
    order = sorted(cand.tolist(), key=lambda i: (-scores[i], best_rank[i], ids[i]))[:k]
    return [(i, float(scores[i])) for i in order]
