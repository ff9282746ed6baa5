"""Unit encoding for ranking: the values a ranking column holds for a unit, on one scale
whichever index produced them."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from agent_memory.kernel import timeutil
from agent_memory.ports import NO_SEQ, SearchUnit


def unit_features(unit: SearchUnit) -> tuple[int, Any, str | None]:
    """The payload's ranking features (``RowRanking`` columns ``seq``, ``key``,
    ``occurred_at``): integer ``metadata["seq"]`` (else ``NO_SEQ``), ``metadata["key"]``,
    ``occurred_at``."""
    return features(unit.metadata.get("seq"), unit.metadata.get("key"), unit.occurred_at)


def features(seq: Any, key: Any, occurred_at: str | None) -> tuple[int, Any, str | None]:
    """``unit_features`` from the raw values (an index that cuts them out of stored payloads)."""
    return ranking_seq(seq), key, occurred_at


def ranking_seq(value: Any) -> int:
    """``value`` as a ``RowRanking.seq`` entry: a plain integer within +-2**62 as it is, anything
    else (a bool, a float, a string, a huge number) ``NO_SEQ``, so positions compare exactly."""
    plain = isinstance(value, int) and not isinstance(value, bool) and abs(value) < -NO_SEQ
    return value if plain else NO_SEQ


def saturate(score: float) -> float:
    """Map a non-negative BM25 score to ``s / (1 + s)``: positive, higher is better, below 1,
    so BM25 scores from either backend live on one bounded scale."""
    s = max(0.0, float(score))
    return s / (1.0 + s)


@functools.lru_cache(maxsize=65536)  # a unit's timestamps are read on every query it is a candidate of
def instant(value: str) -> datetime | None:
    """An RFC 3339 timestamp column entry as an instant; ``None`` when it does not parse."""
    try:
        return timeutil.parse(value)
    except ValueError:
        return None
