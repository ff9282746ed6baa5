"""Which month is meant when a month (or a day of a month) is named without a year.

One rule for both sides of memory, so a statement and a question about it agree: the most
recent one that has begun by the anchor. On the write side the anchor is when the statement
was made ("I moved in July", said in March 2024, is July 2023); on the read side it is the
query's instant (``as_of`` or now). ``temporal`` resolves phrases with it when facts are
written, and ``query_analysis`` turns a question's phrase into a window through ``temporal``.
"""

from __future__ import annotations

from datetime import UTC, datetime

MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}


def most_recent(month: int, anchor: datetime, day: int = 1) -> datetime | None:
    """Midnight UTC of ``day`` of ``month`` in the anchor's year, or a year earlier when that
    lies after the anchor; ``None`` when that day does not exist in the year it lands in."""
    anchor = anchor if anchor.tzinfo else anchor.replace(tzinfo=UTC)
    this_year = _date(anchor.year, month, day)
    if this_year is None:
        return None
    return this_year if this_year <= anchor else _date(anchor.year - 1, month, day)


def _date(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
