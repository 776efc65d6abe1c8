"""``find`` with a creation-time range, ``offset`` and metadata filters, filtered in SQL on SQLite and on
PostgreSQL with the same answers."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hindsight_core import Hindsight, InvalidInputError


def _fill(hs: Hindsight, clock: Any) -> list[Any]:
    rows = [
        ("Booked a flight to Tokyo.", {"topic": "travel", "priority": 1, "done": True}),
        ("Dentist appointment on Friday.", {"topic": "health", "priority": 2, "done": False}),
        ("Hotel in Kyoto for three nights.", {"topic": "travel", "priority": 2, "done": False, "note": None}),
        ("Renew the passport.", {"topic": "travel", "priority": 1.0, "who": "Zoë \"Z\" Ng"}),
        ("Buy running shoes.", {}),
    ]
    stored = []
    for text, metadata in rows:
        stored.append(hs.record(text, "user:f", metadata=metadata))
        clock.advance(days=1)
    hs.record("Trip to Tokyo with colleagues.", "user:other", metadata={"topic": "travel"})
    return stored


def test_time_range_offset_and_metadata(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    m = _fill(hs, clock)
    ids = lambda found: [x.id for x in found]  # noqa: E731

    # created in [after, before): day 1 up to (not including) day 3
    assert ids(hs.find("user:f", created_after=m[1].created_at, created_before=m[3].created_at)) == [m[1].id, m[2].id]
    assert ids(hs.find("user:f", created_after=m[4].created_at)) == [m[4].id]
    assert ids(hs.find("user:f", created_before=m[0].created_at)) == []
    # an aware datetime in another zone means the same instant
    tokyo = m[2].created_at.astimezone(datetime.now(UTC).astimezone().tzinfo)
    assert ids(hs.find("user:f", created_after=tokyo)) == [m[2].id, m[3].id, m[4].id]

    # paging, in write order
    assert ids(hs.find("user:f", limit=2)) == [m[0].id, m[1].id]
    assert ids(hs.find("user:f", limit=2, offset=2)) == [m[2].id, m[3].id]
    assert ids(hs.find("user:f", offset=4)) == [m[4].id]
    assert ids(hs.find("user:f", offset=9)) == []

    # metadata: equality on every key given, JSON types kept apart, never another namespace
    assert ids(hs.find("user:f", metadata={"topic": "travel"})) == [m[0].id, m[2].id, m[3].id]
    assert ids(hs.find("user:f", metadata={"topic": "travel", "priority": 1})) == [m[0].id, m[3].id]  # 1 == 1.0
    assert ids(hs.find("user:f", metadata={"done": True})) == [m[0].id]
    assert ids(hs.find("user:f", metadata={"done": 1})) == []  # true is not 1
    assert ids(hs.find("user:f", metadata={"priority": "1"})) == []  # "1" is not 1
    assert ids(hs.find("user:f", metadata={"note": None})) == [m[2].id]  # present and null
    assert ids(hs.find("user:f", metadata={"who": 'Zoë "Z" Ng'})) == [m[3].id]
    assert ids(hs.find("user:f", metadata={"missing": "x"})) == []
    assert ids(hs.find("user:f", metadata={})) == ids(hs.find("user:f"))
    # everything together, plus the attributes find already had
    assert ids(hs.find("user:f", metadata={"topic": "travel"}, created_after=m[1].created_at, limit=1, offset=1,
                       layer="episodic")) == [m[3].id]
    assert ids(hs.find("user:other", metadata={"topic": "travel"})) != [] and all(
        x.namespace == "user:f" for x in hs.find("user:f", metadata={"topic": "travel"}))


def test_bad_find_arguments_are_refused(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    _fill(hs, clock)
    for kwargs in (
        {"created_after": datetime(2026, 1, 1)},  # naive
        {"created_before": "2026-01-01"},
        {"offset": -1}, {"offset": 1.5}, {"offset": True},
        {"metadata": {"topic": ["travel"]}}, {"metadata": {"a": {"b": 1}}}, {"metadata": ["topic"]},
        {"metadata": {1: "x"}}, {"metadata": {"x": float("nan")}},
    ):
        with pytest.raises(InvalidInputError):
            hs.find("user:f", **kwargs)


async def test_afind_takes_the_new_filters(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    m = _fill(hs, clock)
    found = await hs.afind("user:f", metadata={"topic": "health"}, created_before=m[2].created_at + timedelta(0))
    assert [x.id for x in found] == [m[1].id]
