"""Event-time phrases resolved against the moment they were said (rules.event_time)."""

from datetime import UTC, datetime

import pytest

from agent_memory.rules.event_time import (
    leading_time_phrase,
    resolve_event_time,
    split_time_phrase,
    trailing_time_phrase,
)

OBSERVED = datetime(2026, 5, 12, 16, 24, tzinfo=UTC)  # a Tuesday


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(("phrase", "expected"), [
    # relative offsets keep the time of day
    ("yesterday", at(2026, 5, 11, 16, 24)),
    ("Yesterday", at(2026, 5, 11, 16, 24)),
    ("last night", at(2026, 5, 11, 16, 24)),
    ("the day before yesterday", at(2026, 5, 10, 16, 24)),
    ("last week", at(2026, 5, 5, 16, 24)),
    ("last month", at(2026, 4, 12, 16, 24)),
    ("last year", at(2025, 5, 12, 16, 24)),
    ("2 days ago", at(2026, 5, 10, 16, 24)),
    ("three weeks ago", at(2026, 4, 21, 16, 24)),
    ("a month ago", at(2026, 4, 12, 16, 24)),
    ("a couple of years ago", at(2024, 5, 12, 16, 24)),
    ("5 hours ago", at(2026, 5, 12, 11, 24)),
    ("for 3 years", at(2023, 5, 12, 16, 24)),
    ("tomorrow", at(2026, 5, 13, 16, 24)),
    ("next month", at(2026, 6, 12, 16, 24)),
    ("in 2 days", at(2026, 5, 14, 16, 24)),
    # now-ish
    ("today", OBSERVED),
    ("now", OBSERVED),
    ("this morning", OBSERVED),
    # calendar references: start of the named period
    ("this year", at(2026, 1, 1)),
    ("this month", at(2026, 5, 1)),
    ("this week", at(2026, 5, 11)),
    ("in 2023", at(2023, 1, 1)),
    ("since 2020", at(2020, 1, 1)),
    ("in March", at(2026, 3, 1)),
    ("in May", at(2026, 5, 1)),
    ("in June", at(2025, 6, 1)),  # the most recent June, not a future one
    ("last May", at(2025, 5, 1)),
    ("in March 2024", at(2024, 3, 1)),
    ("March 2024", at(2024, 3, 1)),
    ("on 5 May 2024", at(2024, 5, 5)),
    ("the 5th of May 2024", at(2024, 5, 5)),
    ("May 5th, 2024", at(2024, 5, 5)),
    ("on 3 May", at(2026, 5, 3)),
    ("on 20 May", at(2025, 5, 20)),
    ("last Monday", at(2026, 5, 11)),
    ("on Tuesday", at(2026, 5, 5)),
    # ISO
    ("2024-05-05", at(2024, 5, 5)),
    ("2024-05-05T10:30:00Z", at(2024, 5, 5, 10, 30)),
    ("2024-05-05T10:30:00+02:00", at(2024, 5, 5, 8, 30)),
])
def test_phrases(phrase, expected):
    assert resolve_event_time(phrase, OBSERVED) == expected


@pytest.mark.parametrize("phrase", [None, "", "   ", "someday", "recently", "when I was young", "2024-13-45"])
def test_unknown_phrases_resolve_to_none(phrase):
    assert resolve_event_time(phrase, OBSERVED) is None


def test_month_arithmetic_clamps_to_the_last_day():
    assert resolve_event_time("last month", at(2026, 3, 31, 9)) == at(2026, 2, 28, 9)


def test_naive_observed_at_is_utc():
    assert resolve_event_time("yesterday", datetime(2026, 5, 12, 8)) == at(2026, 5, 11, 8)


def test_result_is_aware_utc():
    assert resolve_event_time("last week", OBSERVED).tzinfo is not None


def test_trailing_phrase_is_cut_off():
    assert trailing_time_phrase("I moved to Berlin last month") == ("I moved to Berlin", "last month")
    assert trailing_time_phrase("I ran a marathon on 5 May 2024") == ("I ran a marathon", "on 5 May 2024")
    assert trailing_time_phrase("I live in London") == ("I live in London", None)
    assert trailing_time_phrase("yesterday") == ("yesterday", None)  # nothing would be left


def test_leading_phrase_is_cut_off():
    assert leading_time_phrase("Last month, I moved to Berlin") == ("I moved to Berlin", "Last month")
    assert leading_time_phrase("I moved to Berlin") == ("I moved to Berlin", None)


def test_split_prefers_the_trailing_phrase():
    assert split_time_phrase("Yesterday I ran 5 km two days ago") == ("Yesterday I ran 5 km", "two days ago")
    assert split_time_phrase("Yesterday I ran") == ("I ran", "Yesterday")
