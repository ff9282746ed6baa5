"""Event-time phrases ("last month", "in 2023") resolved against when they were said.

docs/decisions.md, "Time": a fact's ``validFrom`` is the event time the statement gives, resolved
against ``observed_at``. Extraction keeps such phrases verbatim (a model cannot know the
clock); this module turns them into instants, deterministically:

- Relative offsets move ``observed_at`` by the amount and keep its time of day:
  ``yesterday`` / ``last night`` (-1 day), ``the day before yesterday`` (-2 days),
  ``last|past|previous week|month|year`` (-1 unit), ``N units ago`` and ``for N units``
  (-N; "I've lived here for 3 years"), ``tomorrow``, ``next week|month|year`` and
  ``in N units`` (+N). Months and years are calendar steps (31 March - 1 month = 28/29 Feb).
  Numbers may be digits or words (``three``, ``a``, ``a couple of``, ``a few`` = 3).
- ``now``, ``today``, ``tonight``, ``this morning|afternoon|evening`` are ``observed_at``.
- Calendar references resolve to the start (00:00 UTC) of what they name:
  ``this week|month|year``, ``in 2023``, ``in March 2024``, ``on 5 May 2024``,
  ``May 5th, 2024``, ``last Monday``. A month, a day-month or a weekday without a year is
  the most recent one not after ``observed_at`` (statements we extract describe the past;
  ``months.most_recent``, the rule query analysis uses too);
  ``last <weekday>`` and ``on <weekday>`` are 1-7 days back.
- ISO 8601 dates and timestamps parse as such (a bare date is midnight UTC).
- Leading ``since``, ``as of``, ``starting``, ``back``, ``around``, ``about`` are ignored.

Anything else returns ``None``; the caller then falls back to ``observed_at``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from agent_memory.kernel import timeutil
from agent_memory.rules.months import MONTHS, most_recent

WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
    "a few": 3, "few": 3, "several": 3,
}

_MONTH = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")"
_WEEKDAY = r"(?:" + "|".join(WEEKDAYS) + r")"
_NUM = r"(?:\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?:minute|hour|day|week|fortnight|month|year)s?"
_ORD = r"(?:st|nd|rd|th)?"

# One alternation of every phrase we resolve; the offline extractor uses it to cut a time
# phrase off the start or end of a clause, so what it keeps is what we can resolve.
PHRASE = (
    r"(?:(?:since|as of|starting|back|around|about|just)\s+)?(?:"
    r"right now|just now|now|today|tonight|this (?:morning|afternoon|evening)|earlier today"
    r"|the day before yesterday|yesterday|last night|tomorrow"
    r"|(?:last|past|previous|this|next) (?:week|weekend|month|year)"
    rf"|{_NUM} {_UNIT} ago|(?:in|for) {_NUM} {_UNIT}"
    rf"|(?:on )?(?:the )?\d{{1,2}}{_ORD} (?:of )?{_MONTH},?(?: \d{{4}})?"
    rf"|(?:on )?{_MONTH} \d{{1,2}}{_ORD},?(?: \d{{4}})?"
    rf"|(?:in |last |this ){_MONTH}(?: of)?(?: \d{{4}})?|{_MONTH} \d{{4}}"
    r"|(?:in |since )(?:19|20)\d{2}"
    rf"|(?:on |last ){_WEEKDAY}"
    r"|\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r")"
)

_TRAILING = re.compile(rf"(?:^|[\s,]+)(?P<t>{PHRASE})\s*$", re.IGNORECASE)
_LEADING = re.compile(rf"^(?P<t>{PHRASE})(?:\s*,\s*|\s+)(?=\S)", re.IGNORECASE)
_FILLER = re.compile(r"^(?:since|as of|starting(?: from)?|back|around|about|just)\s+")


def trailing_time_phrase(clause: str) -> tuple[str, str | None]:
    """``"I moved to Berlin last month"`` -> ``("I moved to Berlin", "last month")``."""
    m = _TRAILING.search(clause)
    if m and m.start("t") > 0:
        return clause[: m.start()].rstrip(" ,"), m.group("t")
    return clause, None


def leading_time_phrase(clause: str) -> tuple[str, str | None]:
    """``"Yesterday I ran a marathon"`` -> ``("I ran a marathon", "Yesterday")``."""
    m = _LEADING.match(clause)
    if m:
        return clause[m.end():].strip(), m.group("t")
    return clause, None


def split_time_phrase(clause: str) -> tuple[str, str | None]:
    """Cut one trailing, else one leading, time phrase off ``clause``."""
    rest, phrase = trailing_time_phrase(clause)
    return (rest, phrase) if phrase else leading_time_phrase(clause)


def add_months(dt: datetime, months: int) -> datetime:
    index = dt.year * 12 + dt.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    last_day = (datetime(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)).day
    return dt.replace(year=year, month=month, day=min(dt.day, last_day))


def _shift(dt: datetime, unit: str, n: int) -> datetime:
    unit = unit.rstrip("s")
    if unit == "month":
        return add_months(dt, n)
    if unit == "year":
        return add_months(dt, 12 * n)
    days = {"minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7, "fortnight": 14, "weekend": 7}[unit]
    return dt + timedelta(days=days * n)


def _day(year: int, month: int, day: int = 1) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBERS[text]


def resolve_event_time(phrase: str | None, observed_at: datetime) -> datetime | None:
    """Resolve an event-time phrase to an aware UTC datetime, or ``None`` when unknown."""
    if not phrase or not phrase.strip():
        return None
    obs = observed_at if observed_at.tzinfo else observed_at.replace(tzinfo=UTC)
    obs = obs.astimezone(UTC)
    p = re.sub(r"\s+", " ", phrase.strip().lower()).strip(" .,!")
    while (stripped := _FILLER.sub("", p)) != p:
        p = stripped
    try:
        return _resolve(p, obs)
    except (OverflowError, ValueError):  # "last year" in year 1, "next week" in 9999: unknown
        return None


def _resolve(p: str, obs: datetime) -> datetime | None:
    today = _day(obs.year, obs.month, obs.day)
    assert today is not None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", p):
        try:
            return timeutil.parse(p.upper().replace(" ", "T"))
        except ValueError:
            return None
    fixed = {"now": 0, "right now": 0, "just now": 0, "today": 0, "tonight": 0, "earlier today": 0,
             "this morning": 0, "this afternoon": 0, "this evening": 0, "yesterday": -1,
             "last night": -1, "the day before yesterday": -2, "tomorrow": 1}
    if p in fixed:
        return obs + timedelta(days=fixed[p])
    if m := re.fullmatch(r"(last|past|previous|next) (week|weekend|month|year)", p):
        return _shift(obs, m.group(2), 1 if m.group(1) == "next" else -1)
    if m := re.fullmatch(r"this (week|weekend|month|year)", p):
        if m.group(1) == "year":
            return _day(obs.year, 1)
        if m.group(1) == "month":
            return _day(obs.year, obs.month)
        return today - timedelta(days=today.weekday())
    if m := re.fullmatch(rf"({_NUM}) ({_UNIT}) ago", p):
        return _shift(obs, m.group(2), -_number(m.group(1)))
    if m := re.fullmatch(rf"for ({_NUM}) ({_UNIT})", p):
        return _shift(obs, m.group(2), -_number(m.group(1)))
    if m := re.fullmatch(rf"in ({_NUM}) ({_UNIT})", p):
        return _shift(obs, m.group(2), _number(m.group(1)))
    if m := re.fullmatch(r"(?:in )?((?:19|20)\d{2})", p):
        return _day(int(m.group(1)), 1)
    if m := re.fullmatch(rf"(?:in |last |this )?({_MONTH})(?: of)?(?: (\d{{4}}))?", p):
        month = MONTHS[m.group(1)]
        if m.group(2):
            return _day(int(m.group(2)), month)
        if p.startswith("last ") and month == obs.month:
            return _day(obs.year - 1, month)
        return most_recent(month, obs)
    day_month = re.fullmatch(rf"(?:on )?(?:the )?(\d{{1,2}}){_ORD} (?:of )?({_MONTH}),?(?: (\d{{4}}))?", p)
    month_day = re.fullmatch(rf"(?:on )?({_MONTH}) (\d{{1,2}}){_ORD},?(?: (\d{{4}}))?", p)
    if day_month or month_day:
        if day_month:
            day, month, year = int(day_month.group(1)), MONTHS[day_month.group(2)], day_month.group(3)
        else:
            assert month_day is not None
            day, month, year = int(month_day.group(2)), MONTHS[month_day.group(1)], month_day.group(3)
        if year:
            return _day(int(year), month, day)
        return most_recent(month, obs, day)
    if m := re.fullmatch(rf"(?:on |last )?({_WEEKDAY})", p):
        back = (today.weekday() - WEEKDAYS[m.group(1)]) % 7 or 7
        return today - timedelta(days=back)
    return None
