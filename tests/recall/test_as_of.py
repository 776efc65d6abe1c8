"""Point-in-time recall, ``recall(..., as_of=...)``: the memory as it stood then. Later memories are out,
memories superseded after that moment come back, edited memories answer with the text they had, and
the look into the past writes nothing. On SQLite and PostgreSQL (the snapshot of a moment is SQL)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from hindsight_core import Hindsight, InvalidInputError, Status


def _contents(result: Any) -> list[str]:
    return [h.memory.content for h in result.hits]


def test_superseded_facts_valid_then_come_back_later_ones_do_not(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    ns = "user:liu"
    t0 = clock.current
    episode = hs.record("我们这个项目的预算上限是3万元。", ns, session_id="s1")
    clock.advance(hours=1)
    assert hs.consolidate(ns).status == "done"
    before_change = clock.advance(hours=1)
    clock.advance(days=19)
    hs.record("跟你说一下，预算调整了，上限改成5万元。", ns, session_id="s2")
    clock.advance(hours=1)
    report = hs.consolidate(ns)
    assert report.superseded == 1
    after_change = clock.advance(hours=1)
    query = "项目的预算上限是多少？"

    today = " ".join(_contents(hs.recall(query, ns)))
    assert "5万" in today and "3万" not in today

    then = hs.recall(query, ns, as_of=before_change)
    said = " ".join(_contents(then))
    assert "3万" in said and "5万" not in said  # the old fact was current then; the new one did not exist
    assert all(h.memory.status == Status.ACTIVE and h.memory.created_at <= before_change for h in then.hits)
    assert then.conflicts == []

    later = " ".join(_contents(hs.recall(query, ns, as_of=after_change)))
    assert "5万" in later and "3万" not in later  # superseded before that moment: out
    assert hs.recall(query, ns, as_of=t0 - timedelta(hours=1)).hits == []  # nothing existed yet
    # the episode followed its fact out: its history names the new fact and when
    links = hs.history(episode.id).superseded_by
    assert ["5万" in link.memory.content for link in links][:1] == [True] and links[0].at < after_change


def test_an_edited_memory_answers_with_the_text_it_had(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    ns = "user:e"
    m = hs.record("I live in Berlin, in a flat near the Spree.", ns, session_id="s1")
    hs.record("I work as a nurse at the city hospital.", ns, session_id="s1")
    berlin_time = clock.advance(days=1)
    clock.advance(days=1)
    hs.update(m.id, "I live in Lisbon, in a flat near the river Tagus.", namespace=ns)
    clock.advance(days=1)
    dog = hs.record("I adopted a dog named Rex.", ns, session_id="s2")
    clock.advance(days=1)

    hit = hs.recall("which city do I live in?", ns, as_of=berlin_time).hits[0]
    assert (hit.memory.id, hit.memory.content) == (m.id, "I live in Berlin, in a flat near the Spree.")
    assert "Berlin" in hs.recall("which city do I live in?", ns, as_of=berlin_time).to_prompt()
    # the keyword index of that moment holds the old words, not the new ones
    assert [h.memory.id for h in hs.recall("Spree", ns, as_of=berlin_time).hits][:1] == [m.id]
    assert m.id not in [h.memory.id for h in hs.recall("Tagus", ns, as_of=berlin_time).hits]
    # the dog was adopted later
    assert dog.id not in [h.memory.id for h in hs.recall("do I have a pet dog?", ns, as_of=berlin_time).hits]
    assert dog.id in [h.memory.id for h in hs.recall("do I have a pet dog?", ns).hits]
    # today: the new text
    now_hit = hs.recall("which city do I live in?", ns).hits[0]
    assert (now_hit.memory.id, now_hit.memory.content) == (m.id, "I live in Lisbon, in a flat near the river Tagus.")


def test_as_of_over_a_users_subtree(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    """A user's root and its children, as they stood then: a child's memory from before the moment is in,
    one written after it is out, a child's memory edited later answers with its old text, and a
    neighbour whose id starts alike stays out."""
    hs = open_engine()
    diet = hs.record("Ana follows a strict vegan diet, no eggs or dairy.", "user:ana/store:memories")
    hs.record("Anabel is allergic to eggs and avoids all dairy.", "user:anabel/store:memories")
    clock.advance(days=1)
    moment = clock.current
    clock.advance(days=1)
    later = hs.record("Ana now eats eggs again, but still no dairy.", "user:ana/notes")
    hs.update(diet.id, "Ana follows a vegetarian diet and eats eggs and dairy.", namespace="user:ana/store:memories")
    query = "Can Ana eat eggs or dairy?"

    then = hs.recall(query, "user:ana", subtree=True, as_of=moment)
    assert _contents(then) == ["Ana follows a strict vegan diet, no eggs or dairy."]
    assert [h.memory.id for h in then.hits] == [diet.id]  # the later child memory did not exist yet
    today = hs.recall(query, "user:ana", subtree=True)
    assert {h.memory.id for h in today.hits} == {diet.id, later.id}
    assert "Anabel" not in " ".join(_contents(today))
    assert hs.recall(query, "user:ana", as_of=moment).hits == []  # the root alone held nothing
    assert hs.recall(query, "user:ana", subtree=True, as_of=diet.created_at - timedelta(seconds=1)).hits == []


def test_relative_times_are_read_from_as_of(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    """``now`` defaults to ``as_of``: "yesterday" in a look into the past is the day before that moment."""
    hs = open_engine()
    ns = "user:t"
    trip = hs.record("I went hiking in the Alps with my brother.", ns, session_id="s1")
    moment = clock.advance(days=1)
    clock.advance(days=30)
    hs.record("I went to a concert in Vienna.", ns, session_id="s2")
    clock.advance(days=1)

    then = hs.recall("what did I do yesterday?", ns, as_of=moment)
    window = then.analysis.time_window
    assert window is not None and window.start <= trip.occurred_at < window.end
    assert [h.memory.id for h in then.hits][:1] == [trip.id]
    today = hs.recall("what did I do yesterday?", ns).analysis.time_window
    assert today is not None and not today.start <= trip.occurred_at < today.end


def test_an_erased_memory_is_gone_from_the_past_too(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    """Erasure is for good: a look at a moment before ``forget`` does not bring the memory back."""
    hs = open_engine()
    ns = "user:f"
    pin = hs.record("My bank card PIN is 4921.", ns, session_id="s1")
    kept = hs.record("My bank is the Sparkasse on the corner.", ns, session_id="s1")
    moment = clock.advance(hours=1)
    assert [h.memory.id for h in hs.recall("what is my bank card PIN?", ns, as_of=moment).hits][:1] == [pin.id]
    clock.advance(days=1)
    assert hs.forget(pin.id, namespace=ns)

    then = hs.recall("what is my bank card PIN?", ns, as_of=moment)
    assert pin.id not in [h.memory.id for h in then.hits] and "4921" not in then.to_prompt()
    assert kept.id in [h.memory.id for h in hs.recall("which bank am I with?", ns, as_of=moment).hits]


def test_a_look_into_the_past_writes_nothing(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    m = hs.record("My favourite dish is mapo tofu.", "user:w")
    clock.advance(days=1)
    hs.flush_recall_log()
    logged = hs.store.query("SELECT COUNT(*) FROM recall_log")[0][0]
    assert hs.recall("what food do I like?", "user:w", as_of=clock.current).hits[0].memory.id == m.id
    hs.flush_recall_log()
    assert hs.store.query("SELECT COUNT(*) FROM recall_log")[0][0] == logged
    assert hs.get(m.id) == m  # not reinforced


def test_as_of_must_be_an_aware_datetime(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    hs.record("I like tea.", "user:x")
    for bad in (datetime(2026, 3, 1), "2026-03-01", 1_700_000_000):
        with pytest.raises(InvalidInputError):
            hs.recall("tea", "user:x", as_of=bad)  # type: ignore[arg-type]


async def test_arecall_takes_as_of(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    early = hs.record("My locker code is 1234.", "user:a")
    clock.advance(days=1)
    moment = clock.current
    clock.advance(days=1)
    hs.update(early.id, "My locker code is 9876.")
    result = await hs.arecall("what is my locker code?", "user:a", as_of=moment)
    assert _contents(result) == ["My locker code is 1234."]
