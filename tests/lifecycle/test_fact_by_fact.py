"""Consolidation supersedes fact by fact: an episode retired for a value that changed keeps, as a fact
drawn from it, what else the person said in it, and the agent's echo of the old value goes with it.
The issue's case: after "I live in Lisbon and work as a nurse." and "I moved to Porto", the job could
no longer be recalled."""

from __future__ import annotations

from hindsight_core import Hindsight, Status
from hindsight_core.lifecycle.integrate import without_value
from hindsight_core.types import Layer

NS = "user:ines"


def _active_facts(hs: Hindsight) -> list[str]:
    return [m.content for m in hs.find(NS, layer=Layer.SEMANTIC, status=Status.ACTIVE)]


def test_the_rest_of_an_episode_outlives_the_value_that_changed(engine: Hindsight, clock) -> None:
    said = engine.record("I live in Lisbon and work as a nurse.", NS, session_id="s1")
    echo = engine.record("Lisbon and nursing, noted.", NS, session_id="s1", role="assistant")
    engine.record("Thanks!", NS, session_id="s1")
    clock.advance(days=30)
    engine.record("I moved to Porto last month.", NS, session_id="s2")
    report = engine.consolidate(NS)

    assert report.superseded == 1
    assert engine.get(said.id).status == Status.SUPERSEDED  # type: ignore[union-attr]
    assert engine.get(echo.id).status == Status.SUPERSEDED  # type: ignore[union-attr]
    facts = _active_facts(engine)
    assert "I live in … and work as a nurse." in facts
    assert not any("Lisbon" in f for f in facts)

    job = engine.recall("Do I work in healthcare?", NS, track=False).to_prompt()
    assert "nurse" in job and "Lisbon" not in job
    home = engine.recall("Which city am I living in?", NS, track=False).to_prompt()
    assert "Porto" in home and "Lisbon" not in home


def test_an_episode_that_said_only_the_old_value_is_retired_whole(engine: Hindsight, clock) -> None:
    said = engine.record("I live in Lisbon.", NS, session_id="s1")
    clock.advance(days=30)
    engine.record("We just moved down to Porto.", NS, session_id="s2")
    engine.consolidate(NS)
    assert engine.get(said.id).status == Status.SUPERSEDED  # type: ignore[union-attr]
    assert [f for f in _active_facts(engine) if "Porto" not in f] == []


def test_without_value_cuts_every_occurrence_in_any_case() -> None:
    assert without_value("Lisbon! I love lisbon.", "Lisbon") == "…! I love …."
    assert without_value("I live in Porto.", "Lisbon") is None
    assert without_value("I live in Porto.", " ") is None


def test_an_episode_whose_other_clause_is_small_talk_leaves_nothing(engine: Hindsight, clock) -> None:
    """"Hi" is a clause without the old value, but it says nothing (the content-free kind): no fact is
    drawn from what is left, as none is from a statement that is all value ("预算上限是3万元")."""
    engine.record("Hi, I live in Lisbon.", NS, session_id="s1")
    engine.record("我们这个项目的预算上限是3万元。", NS, session_id="s1")
    clock.advance(days=30)
    engine.record("I moved to Porto last month.", NS, session_id="s2")
    engine.record("跟你说一下，预算调整了，上限改成5万元。", NS, session_id="s2")
    engine.consolidate(NS)
    assert sorted(_active_facts(engine)) == sorted(["The user lives in Porto now (moved there recently)",
                                                    "用户的预算上限是5万元"])
