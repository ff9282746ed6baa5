"""UTC timestamps as RFC 3339 strings with millisecond precision and a ``Z`` suffix, so
that string order is time order everywhere (sort keys, validity windows)."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


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
    return dt.astimezone(UTC)


def normalise(value: str) -> str:
    return iso(parse(value))
