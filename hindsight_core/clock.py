"""Every time-dependent operation reads the time from an injectable clock, so tests can fix it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from hindsight_core.errors import InvalidInputError

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def aware(value: datetime, *, what: str) -> datetime:
    """Naive datetimes are ambiguous across machines; refuse them instead of guessing a zone."""
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"{what} must be timezone-aware (got naive {value.isoformat()})")
    return value


def to_ts(value: datetime) -> float:
    return value.timestamp()


def from_ts(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)
