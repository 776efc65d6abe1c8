"""A standing fact is not forgotten for being left alone: an allergy said once outlives months of monthly
sweeps that archive the day's small events, is not listed as fading, and still shapes a request eight
months later; once a later statement replaces it, it is no longer held. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hindsight_core import Hindsight, Status
from hindsight_core.lifecycle.forecast import forecast
from hindsight_core.types import Layer

NS = "user:held"
ALLERGY = "I'm allergic to aspirin, it gives me breathing trouble."
EVENT = "We watched a film about cats at the cinema yesterday."


def test_a_standing_fact_outlives_monthly_sweeps_that_archive_an_event_of_the_same_day(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    allergy = hs.record(ALLERGY, NS, session_id="s1")
    event = hs.record(EVENT, NS, session_id="s1")
    assert hs.inspection.held([allergy, event]) == {allergy.id}
    assert forecast(allergy, hs.config, held=True).cold_at is None
    assert forecast(event, hs.config).cold_at is not None

    archived: list[str] = []
    for _ in range(8):
        clock.advance(days=30)
        assert allergy.id not in {m.id for m in hs.inspection.fading(NS, 30)}
        archived += hs.sweep().archived_ids
    assert event.id in archived and hs.get(event.id) is None
    kept = hs.get(allergy.id)
    assert kept is not None and kept.status == Status.ACTIVE
    assert "aspirin" in hs.recall("I have a bad headache, what can I take?", NS, track=False).to_prompt()


def test_a_replaced_value_is_no_longer_held(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    lisbon = hs.record("I live in Lisbon.", NS, session_id="s1")
    clock.advance(days=10)
    porto = hs.record("We just moved to Porto.", NS, session_id="s2")
    hs.consolidate(NS)
    facts = {m.content: m for m in hs.find(NS, layer=Layer.SEMANTIC, status=Status.ACTIVE)}
    now = [m for m in facts.values() if "Porto" in m.content]
    assert now and not any("Lisbon" in c for c in facts)
    replaced = [m for m in hs.find(NS) if m.status == Status.SUPERSEDED]
    assert lisbon.id in {m.id for m in replaced}
    assert hs.inspection.held(replaced) == set()
    assert hs.inspection.held(now) == {now[0].id}
    clock.advance(days=400)
    hs.sweep()
    hs.sweep()
    assert hs.get(now[0].id).status == Status.ACTIVE  # type: ignore[union-attr]
    assert hs.get(porto.id) is None  # the statement of the move is an event: distilled, it fades


def test_a_demoted_standing_fact_is_let_go(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    """Forgetting on request is the explicit release of the hold: the demoted allergy cools with the
    sweep like any faded memory, until pinned."""
    hs = open_engine()
    allergy = hs.record(ALLERGY, NS, session_id="s1")
    assert hs.inspection.held([allergy]) == {allergy.id}
    hs.demote(allergy.id)
    assert hs.inspection.held([hs.get(allergy.id)]) == set()  # type: ignore[list-item]
    clock.advance(days=31)
    assert hs.sweep().cooled_ids == [allergy.id]
    assert hs.inspection.held([hs.pin(allergy.id)]) == {allergy.id}
