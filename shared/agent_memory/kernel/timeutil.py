"""UTC timestamps as RFC 3339 strings with millisecond precision and a ``Z`` suffix, so
that string order is time order everywhere (sort keys, validity windows)."""

from __future__ import annotations

from datetime import UTC, datetime

MIN_YEAR, MAX_YEAR = 1, 9999  # what ``datetime`` holds; ``iso`` writes every one as four digits


def now() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    dt = dt.astimezone(UTC)
    # Not strftime: its %Y does not zero-pad years before 1000 on every platform.
    return (f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}."
            f"{dt.microsecond // 1000:03d}Z")


def now_iso() -> str:
    return iso(now())


def parse(value: str) -> datetime:
    """Parse RFC 3339 (``Z`` or offset; a date alone is midnight UTC). Raises ValueError."""
    if not isinstance(value, str) or not value:
        raise ValueError("timestamp must be a non-empty string")
    text = value.strip().replace("z", "Z")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        return dt.astimezone(UTC)
    except OverflowError as exc:  # 0001-01-01T00:00+01:00 is in year 0 in UTC
        raise ValueError(f"{value!r} is outside the years {MIN_YEAR}-{MAX_YEAR} in UTC") from exc


def normalise(value: str) -> str:
    return iso(parse(value))
