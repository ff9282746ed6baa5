"""Building ``RowRanking`` columns (``ports.RowRanking``) from decoded units: for indexes whose
search returns whole units, and for callers that add candidates of their own (tier-1 reads)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agent_memory.ports import NO_SEQ, RowRanking, SearchUnit
from agent_memory.ranking.encoding import ranking_seq


def ranking_from_units(legs: Sequence[Sequence[SearchUnit]],
                       scores: Sequence[Sequence[float]] | None = None) -> RowRanking:
    """The ranking of legs of already decoded units; the first copy of a unit id wins.
    ``scores`` (one per unit of each leg) become ``leg_scores``."""
    position: dict[str, int] = {}
    units: list[SearchUnit] = []
    leg_rows = []
    leg_scores = [] if scores is not None else None
    for j, leg in enumerate(legs):
        rows: dict[int, float] = {}  # candidate -> its score at its first place in the leg
        for n, unit in enumerate(leg):
            i = position.get(unit.id)
            if i is None:
                i = position[unit.id] = len(units)
                units.append(unit)
            rows.setdefault(i, float(scores[j][n]) if scores is not None else 0.0)
        leg_rows.append(np.asarray(list(rows), dtype=np.int64))
        if leg_scores is not None:
            leg_scores.append(np.asarray(list(rows.values()), dtype=np.float64))

    return RowRanking(
        ids=[u.id for u in units], legs=leg_rows,
        kind=_column([u.kind for u in units]), role=_column([u.role for u in units]),
        session_id=_column([u.session_id for u in units]),
        seq=np.fromiter((ranking_seq(u.metadata.get("seq")) for u in units), dtype=np.int64,
                        count=len(units)),
        current=np.fromiter((u.valid_until is None for u in units), dtype=bool, count=len(units)),
        key=_column([u.metadata.get("label") if u.kind == "relation" else u.metadata.get("key") for u in units]),
        occurred_at=_column([u.occurred_at for u in units]),
        labels=[frozenset(u.labels) for u in units],
        decode=lambda indices: [units[i] for i in indices],
        leg_scores=leg_scores,
    )


def ranking_with_units(ranking: RowRanking, units: Sequence[SearchUnit]) -> tuple[RowRanking, np.ndarray]:
    """``ranking`` with ``units`` as candidates too (a unit whose id is already a candidate
    replaces that candidate's columns and decodes as itself: the first copy of an id wins),
    and the candidate index of each of ``units`` in order (a repeated id gives a repeated
    index). The legs stay as they are: the caller ranks the added candidates in a leg of its own."""
    if not units:
        return ranking, np.zeros(0, dtype=np.int64)
    extra = ranking_from_units([units])
    position = {uid: i for i, uid in enumerate(ranking.ids)}
    ids = list(ranking.ids)
    target = np.empty(len(extra.ids), dtype=np.int64)  # extra candidate j -> candidate index
    for j, uid in enumerate(extra.ids):
        i = position.get(uid)
        if i is None:
            i = position[uid] = len(ids)
            ids.append(uid)
        target[j] = i
    n = len(ids)
    cols: dict[str, Any] = {}
    for name, fill in (("kind", None), ("role", None), ("session_id", None), ("seq", NO_SEQ),
                       ("current", False), ("key", None), ("occurred_at", None)):
        old = getattr(ranking, name)
        col = np.empty(n, dtype=old.dtype)
        col[: old.size] = old
        col[old.size:] = fill
        col[target] = getattr(extra, name)
        cols[name] = col
    labels = list(ranking.labels) + [frozenset()] * (n - len(ranking.ids))
    given: dict[int, SearchUnit] = {}
    for j, unit in enumerate(extra.decode(range(len(extra.ids)))):
        labels[int(target[j])] = extra.labels[j]
        given[int(target[j])] = unit  # type: ignore[assignment]
    inner = ranking.decode

    def decode(indices: Sequence[int]) -> list[SearchUnit | None]:
        rest = [i for i in indices if i not in given]
        found = dict(zip(rest, inner(rest), strict=True)) if rest else {}
        return [given[i] if i in given else found[i] for i in indices]

    out = RowRanking(ids=ids, legs=ranking.legs, labels=labels, decode=decode, leg_scores=ranking.leg_scores,
                     **cols)
    first = {uid: j for j, uid in enumerate(extra.ids)}
    return out, target[[first[u.id] for u in units]]


def _column(values: list[Any]) -> np.ndarray:
    """An object array of ``values`` (``np.asarray`` would split tuples and lists into axes)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
