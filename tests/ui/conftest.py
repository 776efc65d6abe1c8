"""A recorded namespace for the inspector's tests: episodes, distilled facts, a fact superseded by a
later one (the rule extractor: "I live in Hangzhou" then "we just moved to Shanghai"), recalls that
reinforced memories over simulated weeks, and a second namespace that must never leak in."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.types import Layer, Memory, Status

NS = "user:amy"
OTHER = "user:bob"


@dataclass
class Recorded:
    engine: Hindsight
    allergy: Memory  # the episode
    old_city: Memory  # superseded semantic fact
    new_city: Memory  # its successor
    other: Memory  # a memory of OTHER
    allergy_fact: Memory | None = None  # the distilled fact recall shows for the allergy episode
    now: datetime | None = None  # the clock's time once recorded, for a process serving the directory
    path: Path | None = None


def record_namespace(hs: Hindsight, clock: object) -> Recorded:
    allergy = hs.record("I'm allergic to peanuts, so no satay for me.", NS, session_id="s1")
    hs.record("I live in Hangzhou, near the West Lake.", NS, session_id="s1")
    hs.record("Can you suggest a good book about gardening?", NS, session_id="s1")
    hs.consolidate(NS)
    (old_city,) = [m for m in hs.find(NS, layer=Layer.SEMANTIC) if "Hangzhou" in m.content]
    for _ in range(3):
        clock.advance(days=5)  # type: ignore[attr-defined]
        hs.recall("Do I have any food allergies?", NS, session_id="s1")
        # a live process flushes within seconds (reinforce_max_age_s); the simulated clock jumps days
        hs.flush_recall_log()
    clock.advance(days=20)  # type: ignore[attr-defined]
    hs.record("Big news: we just moved to Shanghai last weekend.", NS, session_id="s2")
    hs.consolidate(NS)
    hs.flush_recall_log()
    old = hs.get(old_city.id)
    assert old is not None and old.status == Status.SUPERSEDED and old.superseded_by
    new_city = hs.get(old.superseded_by)
    assert new_city is not None
    other = hs.record("Bob keeps bees on his roof in Lyon.", OTHER, session_id="b1")
    (fact,) = [m for m in hs.find(NS, layer=Layer.SEMANTIC) if "peanut" in m.content.casefold()]
    return Recorded(engine=hs, allergy=allergy, old_city=old, new_city=new_city, other=other, allergy_fact=fact)


class Clock:
    """The injectable clock, moved by hand (the tests' ``FixedClock``, for a module-scoped engine)."""

    def __init__(self) -> None:
        self.current = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> datetime:
        self.current += timedelta(**delta)
        return self.current

    def set_ts(self, ts: float) -> None:
        self.current = datetime.fromtimestamp(ts, UTC)


def _engine(path: Path, embedder: object) -> Iterator[Recorded]:
    clock = Clock()
    hs = Hindsight(path, clock=clock, embedder=embedder)  # type: ignore[arg-type]
    try:
        yield record_namespace(hs, clock)
    finally:
        hs.close()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Iterator[Recorded]:
    """Shared by a module's read-only tests: recording and consolidating once keeps them fast."""
    yield from _engine(tmp_path_factory.mktemp("ui") / "data", embedder)


@pytest.fixture
def own_recorded(tmp_path: Path, embedder: object) -> Iterator[Recorded]:
    """For a test that changes memory."""
    yield from _engine(tmp_path / "data", embedder)
