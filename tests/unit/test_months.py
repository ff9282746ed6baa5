"""One month rule for writes and reads: a month named without a year is the most recent
one by the anchor, whether a statement is being stored or a question answered."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.rules import event_time, months
from agent_memory.services.retrieval.query_analysis import analyse


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(("month", "anchor", "expected"), [
    (7, at(2024, 3, 10), at(2023, 7, 1)),  # not yet begun this year: last year's
    (3, at(2024, 3, 10), at(2024, 3, 1)),  # begun already: this year's
    (3, at(2024, 3, 1), at(2024, 3, 1)),   # begins at the anchor itself
    (12, at(2024, 11, 30, 23, 59), at(2023, 12, 1)),
])
def test_most_recent_month(month, anchor, expected):
    assert months.most_recent(month, anchor) == expected


def test_most_recent_day_of_a_month():
    assert months.most_recent(5, at(2024, 5, 4), day=5) == at(2023, 5, 5)
    assert months.most_recent(5, at(2024, 5, 6), day=5) == at(2024, 5, 5)
    assert months.most_recent(2, at(2023, 3, 1), day=30) is None


@pytest.mark.parametrize("phrase", ["in July", "in March", "on 5 May", "May 20th", "in December", "last July"])
@pytest.mark.parametrize("anchor", [at(2024, 3, 10, 12), at(2024, 7, 15), at(2025, 1, 2)])
def test_the_read_side_window_starts_where_the_write_side_resolves_the_phrase(phrase, anchor):
    written = event_time.resolve_event_time(phrase, anchor)
    window = analyse(f"What happened {phrase}?", anchor=anchor).time
    assert written is not None and window is not None
    assert window.start == written.replace(hour=0, minute=0, second=0, microsecond=0)
    assert window.contains(written) and not window.contains(written.replace(year=written.year - 1))
