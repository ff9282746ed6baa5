"""Reranking: the best fused candidates scored again by a ``ports.Reranker`` (a model that reads
the query and each text together) and blended with their fused scores.

The blend keeps the fused score in: the reranker is a refinement, never a dependency, so a
reranker that fails (raises, answers the wrong number of scores or a non-finite one) leaves
the fused order and says so in the trace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from agent_memory.ranking.rules import passed_along

if TYPE_CHECKING:
    from agent_memory.ports import Reranker

_log = logging.getLogger(__name__)


class Candidate(Protocol):
    """What reranking reads of a fused candidate (a retrieval hit)."""

    @property
    def text(self) -> str: ...

    @property
    def score(self) -> float: ...

    @property
    def kind(self) -> str: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


def rerank(reranker: Reranker, query: str, candidates: Sequence[Candidate], *, weight: float,
           reply_share: float = 0.0, context_share: float = 0.0, power: float = 1.0, pin_first: bool = False
           ) -> tuple[list[tuple[int, float]], dict[str, Any]]:
    """The candidates' order after reranking, as ``(index into candidates, score)`` best first,
    and the trace (model, candidates scored, milliseconds, or why it failed).

    Each score is ``(1 - weight) x fused score / the best + weight x s ** power``, ``s`` the
    reranker's score min-max scaled (a power above 1 lets only its clear winners move the order
    far); then, with ``reply_share``, a turn that asks something passes that share of its score
    to its reply, and with ``context_share`` every turn passes that share to the turn before it
    (what it answers or continues; ``rules.passed_along``). With ``pin_first`` the first candidate
    (a tier-1 answer: the current fact of what the query names and asks) stays first with its
    fused score and is not scored: a turn that says an older value can match the question's
    words better."""
    pinned = [(0, float(candidates[0].score))] if pin_first and candidates else []
    rest = candidates[len(pinned):]
    order, trace = _rescored(reranker, query, rest, weight, reply_share, context_share, power)
    return pinned + [(len(pinned) + i, score) for i, score in order], trace


def _rescored(reranker: Reranker, query: str, candidates: Sequence[Candidate], weight: float,
              reply_share: float, context_share: float, power: float
              ) -> tuple[list[tuple[int, float]], dict[str, Any]]:
    """``rerank`` without the pinning: every candidate scored again."""
    started = time.perf_counter()
    fused_order = [(i, float(c.score)) for i, c in enumerate(candidates)]
    if len(candidates) < 2:
        return fused_order, {"model": reranker.name, "candidates": len(candidates)}
    try:
        judged = np.asarray(reranker.score(query, [c.text for c in candidates]), dtype=np.float64)
        if judged.shape != (len(candidates),) or not np.isfinite(judged).all():
            raise ValueError(f"expected {len(candidates)} finite scores, got shape {judged.shape}")
    except Exception as exc:  # noqa: BLE001 - any reranker failure keeps the fused order
        _log.warning("reranker %s failed, fused order kept: %s", reranker.name, exc)
        failed = type(exc).__name__
        return fused_order, {"model": reranker.name, "candidates": len(candidates), "failed": failed}
    fused = np.array([c.score for c in candidates])
    top = float(fused.max())
    low, high = float(judged.min()), float(judged.max())
    scaled = (judged - low) / (high - low) if high > low else np.zeros_like(judged)
    blended = (1.0 - weight) * (fused / top if top > 0 else fused) + weight * scaled ** power
    if reply_share > 0 or context_share > 0:
        sessions = [c.session_id for c in candidates]
        seqs = [c.metadata.get("seq") if c.kind == "turn" else None for c in candidates]
        # each turn passes on its own blended score, never what it received: nothing compounds
        given = np.zeros_like(blended)
        if reply_share > 0:
            asks = ["?" in c.text for c in candidates]
            given += passed_along(blended, sessions, seqs, asks, step=1, share=reply_share)
        if context_share > 0:
            given += passed_along(blended, sessions, seqs, [True] * len(candidates), step=-1, share=context_share)
        blended = blended + given
    order = sorted(range(len(candidates)), key=lambda i: (-blended[i], i))  # ties keep the fused order
    trace = {"model": reranker.name, "candidates": len(candidates),
             "ms": round((time.perf_counter() - started) * 1000, 3)}
    return [(i, float(blended[i])) for i in order], trace
