"""The ranking rules (``agent_memory.ranking.rules``): pure functions over candidate columns."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from agent_memory.ports import RowRanking, SearchUnit
from agent_memory.ranking import rules
from agent_memory.ranking.rows import ranking_from_units


def _turn_unit(uid: str, session: str, seq: int) -> SearchUnit:
    return SearchUnit(id=uid, context_id="c", kind="turn", text=uid, session_id=session, metadata={"seq": seq})


def _rows(units: list[SearchUnit], scores: dict[str, float]) -> tuple[RowRanking, np.ndarray]:
    ranking = ranking_from_units([units])
    return ranking, np.array([scores[uid] for uid in ranking.ids])


def _by_id(ranking: RowRanking, out: np.ndarray) -> dict[str, float]:
    return dict(zip(ranking.ids, out.tolist(), strict=True))


def _neighbours(scores, turns, ranking, share, **kw):
    return rules.share_with_neighbours(scores, turns, ranking.seq, ranking.session_id, share, **kw)


def test_a_turn_shares_its_score_with_nearby_turns_of_its_session_decaying_with_distance():
    units = [_turn_unit("hit", "s1", 10), _turn_unit("next", "s1", 11), _turn_unit("three_on", "s1", 13),
             _turn_unit("far", "s1", 20), _turn_unit("other_session", "s2", 11)]
    ranking, scores = _rows(units, {"hit": 1.0, "next": 0.0, "three_on": 0.0, "far": 0.0, "other_session": 0.0})
    turns = np.ones(len(units), dtype=bool)
    out = _by_id(ranking, _neighbours(scores, turns, ranking, 0.3, window=4, decay=0.5))
    assert out["next"] == pytest.approx(0.3) and out["three_on"] == pytest.approx(0.3 * 0.25)
    assert out["far"] == 0.0 and out["other_session"] == 0.0 and out["hit"] == 1.0
    # Shares come from the scores before sharing (no chains), and the default is the adjacent turn only.
    assert _by_id(ranking, _neighbours(scores, turns, ranking, 0.3))["three_on"] == 0.0
    # A turn that is not a candidate neither gives nor takes a share.
    turns[ranking.ids.index("next")] = False
    assert _by_id(ranking, _neighbours(scores, turns, ranking, 0.3))["next"] == 0.0


def test_only_strong_turns_share_beyond_the_adjacent_one():
    units = [_turn_unit("weak", "s1", 10), _turn_unit("next", "s1", 11), _turn_unit("two_on", "s1", 12),
             SearchUnit(id="chunk", context_id="c", kind="chunk", text="chunk")]
    ranking, scores = _rows(units, {"chunk": 1.0, "weak": 0.4, "next": 0.0, "two_on": 0.0})
    turns = ranking.kind == "turn"
    out = _by_id(ranking, _neighbours(scores, turns, ranking, 0.3, window=4, decay=0.5, strong=0.5))
    assert out["next"] == pytest.approx(0.3 * 0.4) and out["two_on"] == 0.0  # weak: adjacent only
    out = _by_id(ranking, _neighbours(scores, turns, ranking, 0.3, window=4, decay=0.5, strong=0.3))
    assert out["two_on"] == pytest.approx(0.3 * 0.5 * 0.4) and out["chunk"] == 1.0


def test_units_of_a_session_holding_a_strong_hit_outrank_equal_scores_elsewhere():
    units = [_turn_unit("strong", "harbour", 1), _turn_unit("quiet", "harbour", 9), _turn_unit("alone", "market", 3),
             SearchUnit(id="note", context_id="c", kind="chunk", text="note")]  # no session
    ranking, scores = _rows(units, {"strong": 1.0, "quiet": 0.2, "alone": 0.2, "note": 0.2})
    every = np.ones(len(units), dtype=bool)
    out = _by_id(ranking, rules.session_prior(scores, every, ranking.session_id, 1.0))
    assert out["strong"] == pytest.approx(2.0) and out["quiet"] == pytest.approx(0.4)
    assert out["alone"] == pytest.approx(0.2 * 1.2) and out["note"] == pytest.approx(0.2 * 1.2)
    assert out["quiet"] > out["alone"]
    # A unit without a session is its own: a strong chunk is never ranked below the turns it outscored.
    ranking, scores = _rows(units, {"strong": 0.5, "quiet": 0.45, "alone": 0.2, "note": 1.0})
    out = _by_id(ranking, rules.session_prior(scores, every, ranking.session_id, 1.0))
    assert out["note"] == pytest.approx(2.0) and out["note"] > out["strong"] > out["quiet"]


def test_leg_scores_count_as_a_share_of_the_legs_best():
    assert rules.share_of_best(np.array([2.0, 1.0, 0.5])).tolist() == [1.0, 0.5, 0.25]
    # two candidates keep their real gap (min-max would make any gap 1 against 0)
    assert rules.share_of_best(np.array([0.50, 0.49])).tolist() == pytest.approx([1.0, 0.98])
    assert rules.share_of_best(np.array([0.4, -0.2])).tolist() == [1.0, 0.0]  # a negative cosine earns nothing
    assert rules.share_of_best(np.array([-0.1, -0.3])).tolist() == [0.0, 0.0]


def test_reply_share_reaches_only_the_next_turn_of_the_same_session_and_does_not_compound():
    sessions = ["s1", "s1", "s1", "s2", "s1", "s1", "s1", "s1"]
    # the fifth is not a turn ("A note?", an action): no position, so it neither asks nor replies
    seqs = [1, 2, 3, 2, None, 6, 7, 9]
    asks = [True, True, False, False, True, False, True, False]
    scores = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    out = rules.share_with_replies(scores, sessions, seqs, asks, 0.4)
    # the first question lifts its reply (itself a question, which passes on its own score, 0);
    # another session's seq 2, a non-turn's next seq, and a turn two positions on gain nothing
    assert out.tolist() == [1.0, 0.4, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert scores.tolist() == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]  # the input is left as it was


def test_kind_factor_weighs_assistant_turns_current_facts_and_facts_but_the_spared_one():
    kind = np.array(["turn", "turn", "attribute", "relation", "attribute", "chunk"], dtype=object)
    role = np.array(["user", "assistant", None, None, None, None], dtype=object)
    current = np.array([False, False, True, False, True, False])
    spared = np.array([4], dtype=np.int64)  # tier 1's best fact
    out = rules.kind_factor(kind, role, current, spared, assistant=0.5, current_fact=1.5, fact=0.7)
    assert out.tolist() == pytest.approx([1.0, 0.5, 1.5 * 0.7, 0.7, 1.5, 1.0])
    # fact 1.0: nothing spared or not, every fact keeps its current-fact factor only
    out = rules.kind_factor(kind, role, current, spared, assistant=0.5, current_fact=1.5, fact=1.0)
    assert out.tolist() == [1.0, 0.5, 1.5, 1.0, 1.5, 1.0]


def test_key_hint_factor_lifts_only_facts_with_an_asked_key_or_label():
    kind = np.array(["attribute", "attribute", "relation", "relation", "turn"], dtype=object)
    key = np.array(["location", "employer", "manager", "sister", "location"], dtype=object)
    out = rules.key_hint_factor(kind, key, frozenset({"location", "manager"}), 2.5)
    assert out.tolist() == [2.5, 1.0, 2.5, 1.0, 1.0]


def test_time_factor_boosts_units_said_in_the_window_or_shortly_after():
    occurred = np.array(["2023-07-03T10:00:00Z", "2023-08-10T00:00:00Z", "2023-08-20T00:00:00Z",
                         "2023-06-30T23:59:59Z", None, "not a time"], dtype=object)
    candidates = np.array([True, True, True, True, True, True])
    start, end = datetime(2023, 7, 1, tzinfo=UTC), datetime(2023, 8, 1, tzinfo=UTC)
    out = rules.time_factor(occurred, candidates, start, end, 14.0, 1.0)
    # inside; 9 days after (within the slack); 19 days after; before the window; no time; unparsable
    assert out.tolist() == [2.0, 2.0, 1.0, 1.0, 1.0, 1.0]
    candidates[0] = False  # only candidates are boosted
    assert rules.time_factor(occurred, candidates, start, end, 14.0, 1.0).tolist()[0] == 1.0


def test_said_factor_lowers_stale_turns_and_lifts_turns_stating_the_asked_value():
    ids = ["t-old", "t-new", "t-other", "a-fact"]
    out = rules.said_factor(ids, frozenset({"t-old"}), frozenset({"t-new"}), superseded=0.25, support=2.0)
    assert out.tolist() == [0.25, 2.0, 1.0, 1.0]
    assert rules.said_factor(ids, frozenset(), frozenset(), superseded=0.25, support=2.0).tolist() == [1.0] * 4


def test_evidence_factor_lowers_questions_echoes_and_stale_turns_only():
    kind = np.array(["turn", "turn", "turn", "turn", "chunk", "attribute"], dtype=object)
    role = np.array(["user", "user", "assistant", "user", None, None], dtype=object)
    asks = np.array([True, False, False, False, True, False])
    stale = np.array([False, False, False, True, False, True])
    out = rules.evidence_factor(kind, role, asks, stale, question=0.25, assistant=0.5, superseded=0.4)
    assert out.tolist() == pytest.approx([0.25, 1.0, 0.5, 0.4, 1.0, 1.0])
    plain = rules.evidence_factor(kind, role, asks, stale, question=0.25)
    assert plain.tolist() == pytest.approx([0.25, 1.0, 1.0, 1.0, 1.0, 1.0])


def test_lead_raises_the_answer_just_above_the_best_and_never_lowers_it():
    scores = np.array([0.9, 0.4, 0.2])
    seen = np.array([True, True, False])
    out = rules.lead(scores, seen, 1)
    assert out[1] > out[0] == 0.9 and out[2] == 0.2
    assert rules.lead(scores, seen, 0)[0] >= 0.9


def test_echoes_move_just_below_the_lowest_source_they_outranked():
    # 0: a question, 1: a reply, 2: an unrelated statement, 3: the passage both repeat
    echo = [True, True, False, False]
    sources = [[3], [3], [], []]
    assert rules.echoes_below_sources(echo, sources) == [2, 3, 0, 1]


def test_an_echo_already_below_its_sources_or_without_one_stays():
    echo = [False, True, True]
    assert rules.echoes_below_sources(echo, [[], [0], []]) == [0, 1, 2]
    # an echo never counts as a source, and a source above never moves an echo up
    assert rules.echoes_below_sources([True, True, False], [[1], [], []]) == [0, 1, 2]


def test_passed_along_reaches_the_turn_step_positions_away_in_the_same_session_only():
    sessions = ["s1", "s1", "s2", "s1", None]
    seqs = [1, 2, 1, None, 3]
    scores = np.array([0.5, 1.0, 1.0, 1.0, 1.0])
    back = rules.passed_along(scores, sessions, seqs, [True] * 5, step=-1, share=0.1)
    assert back.tolist() == pytest.approx([0.1, 0.0, 0.0, 0.0, 0.0])
    ahead = rules.passed_along(scores, sessions, seqs, [True, False, True, True, True], step=1, share=0.4)
    assert ahead.tolist() == pytest.approx([0.0, 0.2, 0.0, 0.0, 0.0])  # only givers give


def test_session_codes_group_equal_sessions_and_leave_none_out() -> None:
    sessions = np.asarray(["s2", None, "s1", "", "s2", "s1"], dtype=object)
    codes = rules.session_codes(sessions)
    assert codes.dtype == np.int64 and codes.tolist()[1] == -1 and codes.tolist()[3] == -1
    assert codes[0] == codes[4] != codes[2] == codes[5] >= 0
    assert rules.session_codes(codes) is codes  # codes already: taken as they are
    scores = np.asarray([1.0, 0.5, 0.2, 0.9, 0.1, 0.3])
    seen = np.ones(6, dtype=bool)
    # Either form gives the same prior.
    assert rules.session_prior(scores, seen, sessions, 1.0).tolist() == rules.session_prior(scores, seen, codes, 1.0).tolist()
