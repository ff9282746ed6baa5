"""Ranking rules: small pure functions over candidate columns (numpy arrays), each one reason
a candidate should rank higher or lower than its fused score says. ``rank.rank`` applies
them in a recipe's order; none reads a unit, a store or the query text itself."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from agent_memory.ports import NO_SEQ
from agent_memory.ranking.encoding import instant


def share_of_best(values: np.ndarray) -> np.ndarray:
    """``values`` as a share of the list's best (clipped to [0, 1]; 0 when nothing scores
    above 0). Not min-max: with two candidates that would make any gap look decisive."""
    top = float(values.max())
    return np.clip(values / top, 0.0, 1.0) if top > 0 else np.zeros_like(values)


def share_with_neighbours(scores: np.ndarray, turns: np.ndarray, seq: np.ndarray, sessions: np.ndarray,
                          share: float, window: int = 1, decay: float = 1.0,
                          strong: float = 0.0) -> np.ndarray:
    """Each candidate turn (``turns``; ``seq`` its position in its session, ``sessions`` the
    session) passes ``share`` of its score to the candidate turns right before and after it in
    its session; a strong one (at least ``strong`` x the best score) also passes
    ``share * decay ** (d - 1)`` to those ``d`` positions away, up to ``window``: a conversation
    stays on a topic for a few turns, so a turn near strong hits is more likely to bear on the
    question than an isolated one with the same score. Only strong turns reach further, or a
    run of weak matches in one short session would add up and outrank a strong document chunk
    or fact. Only candidates take part: a neighbour the filter did not let through is never
    added. Shares come from the scores before sharing: no chains."""
    codes = session_codes(sessions)
    idx = np.flatnonzero(turns & (seq != NO_SEQ) & (codes >= 0))
    if idx.size < 2:
        return scores
    session = codes[idx]
    stride = int(seq[idx].max()) + window + 2
    position = session * stride + seq[idx].astype(np.int64)
    order = np.argsort(position, kind="stable")
    sorted_pos, sorted_idx = position[order], idx[order]
    floor = strong * float(scores.max(initial=0.0))
    out = scores.copy()
    for d in range(1, max(1, window) + 1):
        part = share * decay ** (d - 1)
        at = np.searchsorted(sorted_pos, position + d)
        found = at < sorted_pos.size
        found[found] = sorted_pos[at[found]] == position[found] + d
        before, after = idx[found], sorted_idx[at[found]]
        give_after, give_before = scores[before], scores[after]
        if d > 1:  # beyond the adjacent turn only strong turns share
            give_after = np.where(give_after >= floor, give_after, 0.0)
            give_before = np.where(give_before >= floor, give_before, 0.0)
        np.add.at(out, after, part * give_after)
        np.add.at(out, before, part * give_before)
    return out


def session_prior(scores: np.ndarray, seen: np.ndarray, sessions: np.ndarray, weight: float) -> np.ndarray:
    """Each candidate's (``seen``) score x ``1 + weight * b / top``, where ``b`` is the best score
    in the unit's session and ``top`` the best overall: a session that holds a strong hit is
    about what the question asks, so its other units outrank equally scored ones from sessions
    that do not. A unit without a session (a document chunk) is its own session: ``b`` is its
    own score, so the rule never ranks it below turns it outscored."""
    cand = np.flatnonzero(seen)
    if not cand.size:
        return scores
    top = float(scores[cand].max())
    if top <= 0:
        return scores
    codes = session_codes(sessions)
    has = codes[cand] >= 0
    b = scores[cand].copy()
    idx = cand[has]
    if idx.size:
        session = codes[idx]
        best = np.zeros(int(session.max()) + 1)
        np.maximum.at(best, session, scores[idx])
        b[has] = best[session]
    out = scores.copy()
    out[cand] = scores[cand] * (1.0 + weight * b / top)
    return out


def share_with_replies(scores: np.ndarray, sessions: Sequence[str | None], seqs: Sequence[Any],
                       asks: Sequence[bool], share: float) -> np.ndarray:
    """``scores`` plus, for each turn that asks something (``asks``), ``share`` x its score
    added to the next turn of its session (``seq`` + 1) when that one is in the list: a turn
    that asks what the query asks is often outranked by the reply that answers it. ``seqs[i]``
    is a turn's integer position in its session (anything else, e.g. ``None`` for a unit that
    is not a turn, takes no part). A turn's own score is what it passes on, never what it
    received: a chain of questions does not compound."""
    return scores + passed_along(scores, sessions, seqs, asks, step=1, share=share)


def passed_along(scores: np.ndarray, sessions: Sequence[str | None], seqs: Sequence[Any],
                 givers: Sequence[bool], *, step: int, share: float) -> np.ndarray:
    """What each candidate receives when every giver passes ``share`` x its own score to the
    turn ``step`` positions away in its session (+1 its reply, -1 the turn it follows), when
    that turn is in the list. Only turns (an integer ``seq``) give or receive."""
    out = np.zeros_like(scores)
    position = {(session, seq): i for i, (session, seq) in enumerate(zip(sessions, seqs, strict=True))
                if session is not None and isinstance(seq, int)}
    for i, (session, seq) in enumerate(zip(sessions, seqs, strict=True)):
        if not isinstance(seq, int) or not givers[i]:
            continue
        other = position.get((session, seq + step))
        if other is not None:
            out[other] += share * scores[i]
    return out


def kind_factor(kind: np.ndarray, role: np.ndarray, current: np.ndarray, spared: np.ndarray, *,
                assistant: float, current_fact: float, fact: float) -> np.ndarray:
    """Each candidate's multiplier for what it is: assistant turns x ``assistant`` (a reply
    restates what the user said), current attributes and relations x ``current_fact``, and
    every attribute and relation but the ``spared`` rows (tier 1's best answer) x ``fact``
    (a fact's source turn is what answers)."""
    factor = np.ones(kind.size)
    facts = (kind == "attribute") | (kind == "relation")
    factor[(kind == "turn") & (role == "assistant")] *= assistant
    factor[facts & current] *= current_fact
    if fact != 1.0:
        facts[spared] = False
        factor[facts] *= fact
    return factor


def key_hint_factor(kind: np.ndarray, key: np.ndarray, key_hints: frozenset[str],
                    weight: float) -> np.ndarray:
    """x ``weight`` for attributes and relations whose key or label (``key``) the question asks
    about (``key_hints``: "where do I live" -> location), so the fact that answers outranks
    turns that merely share its words."""
    hinted = np.fromiter((k in key_hints for k in key.tolist()), dtype=bool, count=key.size)
    factor = np.ones(kind.size)
    factor[((kind == "attribute") | (kind == "relation")) & hinted] *= weight
    return factor


def said_factor(ids: Sequence[str], stale: frozenset[str], supports: frozenset[str], *,
                superseded: float, support: float) -> np.ndarray:
    """x ``superseded`` for turns whose facts all no longer hold at the query's instant
    (``stale``: superseded, or not valid yet under ``asOf``), x ``support`` for turns that state
    a value holding then of the key the question asks for (``supports``): of two turns about
    one slot, the one that says what holds outranks the one that said what used to. A stale
    turn stays a candidate (history questions want it)."""
    factor = np.ones(len(ids))
    if stale and superseded != 1.0:
        factor[np.fromiter((i in stale for i in ids), dtype=bool, count=len(ids))] *= superseded
    if supports and support != 1.0:
        factor[np.fromiter((i in supports for i in ids), dtype=bool, count=len(ids))] *= support
    return factor


def evidence_factor(kind: np.ndarray, role: np.ndarray, asks: np.ndarray, stale: np.ndarray, *,
                    question: float, assistant: float = 1.0, superseded: float = 1.0) -> np.ndarray:
    """Each decoded candidate's multiplier for what kind of evidence it is: a user turn that
    only asks (``asks``: question form, no fact stated) x ``question``, an assistant reply x
    ``assistant``, a stale turn (see ``said_factor``) x ``superseded``. Statements and
    document chunks keep their score, so of two that match equally the question, the echo
    and the superseded statement rank below. Applied to decoded hits (the question form is
    read from the text), after a reranker when there is one: it scores texts afresh, and a
    question repeats the query's words."""
    turns = kind == "turn"
    factor = np.ones(kind.size)
    factor[turns & asks] *= question
    factor[turns & (role == "assistant")] *= assistant
    factor[turns & stale] *= superseded
    return factor


def echoes_below_sources(echo: Sequence[bool], sources: Sequence[Sequence[int]]) -> list[int]:
    """A ranked list's order (indices) with each echo (``echo``: a question, an assistant
    reply) moved just below the lowest of its ``sources`` (the indices of the statements and
    passages it repeats) that it outranked: a question never outranks what answers it, a reply
    never outranks what it drew on. Everything else keeps its order; a score never moves an
    echo up."""
    keys = []
    for i, is_echo in enumerate(echo):
        below = max((j for j in sources[i] if j > i and not echo[j]), default=i) if is_echo else i
        keys.append((below, 1 if below > i else 0, i))
    return [i for *_, i in sorted(keys)]


def lead(scores: np.ndarray, seen: np.ndarray, row: int) -> np.ndarray:
    """``scores`` with candidate ``row`` (tier 1's answer: the current fact of the key the
    question asks for) raised just above the best, so it leads whatever shares its words:
    "I work at Globex." matches "Where do I work?" word for word, "User employer: Globex" is
    the answer."""
    out = scores.copy()
    top = float(scores[seen].max(initial=0.0))
    out[row] = max(float(scores[row]), top * (1.0 + 1e-9) + 1e-12)
    return out


def time_factor(occurred_at: np.ndarray, candidates: np.ndarray, start: datetime, end: datetime,
                slack_days: float, boost: float) -> np.ndarray:
    """x ``1 + boost`` for candidates said inside the query's window ``[start, end)`` or up to
    ``slack_days`` after it (people talk about an event after it happened); a unit without a
    parsable ``occurred_at`` is never boosted."""
    factor = np.ones(occurred_at.size)
    until = end + timedelta(days=slack_days)
    for i in np.flatnonzero(candidates).tolist():
        when = instant(occurred_at[i]) if occurred_at[i] else None
        if when is not None and start <= when < until:
            factor[i] *= 1.0 + boost
    return factor


def session_codes(sessions: np.ndarray) -> np.ndarray:
    """A small integer per distinct session among ``sessions`` (``session_id`` strings), -1
    for none or empty; an integer array is taken as codes already (``rank`` computes them once
    for every rule that groups by session)."""
    if sessions.dtype.kind in "iu":
        return sessions
    codes: dict[str, int] = {}
    return np.fromiter((codes.setdefault(x, len(codes)) if x else -1 for x in sessions.tolist()),
                       dtype=np.int64, count=sessions.size)
