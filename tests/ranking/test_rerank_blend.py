"""The reranking blend (``ranking.rerank``): reranker scores against fused ones, tier-1 pinning,
and the fused order kept when the reranker fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from agent_memory.ranking.rerank import rerank


@dataclass
class Candidate:
    text: str
    score: float
    kind: str = "chunk"
    session_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class FixedReranker:
    name = "test/fixed"

    def __init__(self, scores):
        self.scores, self.calls = scores, []

    def score(self, query, texts):
        self.calls.append(list(texts))
        if isinstance(self.scores, Exception):
            raise self.scores
        return np.asarray(self.scores, dtype=np.float64)


def test_the_blend_is_the_fused_share_of_the_best_and_the_min_max_scaled_reranker_score():
    cands = [Candidate("a", 0.8), Candidate("b", 0.4), Candidate("c", 0.2)]
    order, trace = rerank(FixedReranker([0.0, 5.0, 10.0]), "q", cands, weight=0.5)
    # a: 0.5 x 1.0 + 0.5 x 0.0; b: 0.5 x 0.5 + 0.5 x 0.5; c: 0.5 x 0.25 + 0.5 x 1.0
    assert order == [(2, pytest.approx(0.625)), (0, pytest.approx(0.5)), (1, pytest.approx(0.5))]
    assert trace["model"] == "test/fixed" and trace["candidates"] == 3 and "ms" in trace


def test_a_pinned_first_candidate_keeps_its_place_and_score_and_is_not_scored():
    cands = [Candidate("tier 1", 0.9), Candidate("b", 0.4), Candidate("c", 0.2)]
    reranker = FixedReranker([0.0, 1.0])
    order, trace = rerank(reranker, "q", cands, weight=1.0, pin_first=True)
    assert order == [(0, 0.9), (2, 1.0), (1, 0.0)]
    assert reranker.calls == [["b", "c"]] and trace["candidates"] == 2


def test_after_the_blend_a_question_passes_its_share_to_its_reply():
    cands = [Candidate("Where to?", 1.0, "turn", "s1", {"seq": 1}), Candidate("The lake.", 1.0, "turn", "s1", {"seq": 2}),
             Candidate("A note?", 1.0, "action", "s1", {"seq": 3}), Candidate("Later.", 1.0, "turn", "s1", {"seq": 4})]
    order, _ = rerank(FixedReranker([1.0, 0.0, 1.0, 0.5]), "q", cands, weight=1.0, reply_share=0.4)
    assert dict(order) == {0: 1.0, 1: pytest.approx(0.4), 2: 1.0, 3: 0.5}  # the action is no turn


@pytest.mark.parametrize("scores", [RuntimeError("down"), [1.0], [np.nan, 1.0, 2.0]], ids=["raises", "short", "nan"])
def test_a_failing_reranker_leaves_the_fused_order_and_says_why(scores):
    cands = [Candidate("a", 0.8), Candidate("b", 0.4), Candidate("c", 0.2)]
    order, trace = rerank(FixedReranker(scores), "q", cands, weight=0.5)
    assert order == [(0, 0.8), (1, 0.4), (2, 0.2)]
    assert trace["failed"] in ("RuntimeError", "ValueError")


def test_a_power_above_one_lets_only_the_rerankers_clear_winners_move_far():
    cands = [Candidate("a", 0.8), Candidate("b", 0.4), Candidate("c", 0.2)]
    linear, _ = rerank(FixedReranker([0.0, 5.0, 10.0]), "q", cands, weight=0.5)
    squared, _ = rerank(FixedReranker([0.0, 5.0, 10.0]), "q", cands, weight=0.5, power=2.0)
    # b: 0.5 x 0.5 + 0.5 x 0.5 ** 2 falls below a's 0.5 x 1.0; c: 0.5 x 0.25 + 0.5 x 1.0 still leads
    assert dict(linear)[1] == pytest.approx(0.5)
    assert squared == [(2, pytest.approx(0.625)), (0, pytest.approx(0.5)), (1, pytest.approx(0.375))]


def test_with_context_share_every_turn_passes_its_own_score_to_the_turn_before_it():
    cands = [Candidate("We went hiking.", 1.0, "turn", "s1", {"seq": 1}),
             Candidate("Where to?", 1.0, "turn", "s1", {"seq": 2}),
             Candidate("The lake.", 1.0, "turn", "s1", {"seq": 3}),
             Candidate("Another day.", 1.0, "turn", "s2", {"seq": 2}),
             Candidate("A note.", 1.0, "action", "s1", {"seq": 4})]
    order, _ = rerank(FixedReranker([0.0, 0.0, 1.0, 1.0, 1.0]), "q", cands, weight=1.0,
                      reply_share=0.4, context_share=0.1)
    scores = dict(order)
    # "Where to?" gets 0.1 x the reply's 1.0, and passes 0.4 x its own 0 on; the first turn gets
    # 0.1 x what "Where to?" scored itself (0), not what it received: nothing compounds
    assert scores[1] == pytest.approx(0.1) and scores[0] == 0.0
    assert scores[2] == pytest.approx(1.0)  # the action (no turn) passes nothing to seq 3
    assert scores[3] == pytest.approx(1.0)  # another session's seq 3 is not its neighbour
