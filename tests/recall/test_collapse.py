"""Issue 12, one hit per fact: repeats, echoes and a fact's source episodes take one slot."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.config import HindsightConfig, RecallConfig

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
FILLER = [
    ("user", "Can you explain how compound interest works?"),
    ("assistant", "Interest is added to the principal, so later interest is earned on earlier interest."),
    ("user", "What's a good way to learn touch typing?"),
]


def _record(hs: Hindsight, ns: str, turns: list[tuple[str, str]]) -> None:
    hs.record_many([{"content": text, "role": role, "session_id": "s1", "occurred_at": T0 + timedelta(minutes=i)}
                    for i, (role, text) in enumerate(turns)], ns)


def test_the_same_sentence_three_times_is_one_hit(engine: Hindsight) -> None:
    same = "The team offsite is in Porto on May 12."
    _record(engine, "u:dup", [("user", same), ("user", same), ("user", same),
                              ("user", "The offsite budget is 200 euros per person."),
                              ("user", "The offsite agenda starts with a hike at 9am."), *FILLER])
    res = engine.recall("What do I need to know about the team offsite?", "u:dup", k=3, now=T0 + timedelta(days=2))
    prompt = res.to_prompt()
    assert prompt.count("Porto") == 1
    porto = next(h for h in res.hits if "Porto" in h.memory.content)
    assert len(porto.sources) == 2 and all(s.content == same for s in porto.sources)


@pytest.fixture
def echo_engine(tmp_path: Path, clock: Any, embedder: Any) -> Iterator[Hindsight]:
    """The echo rule is opt-in (``recall.collapse_echo_z``): on LoCoMo it also merged distinct turns."""
    config = HindsightConfig(recall=RecallConfig(collapse_echo_z=5.5))
    hs = Hindsight(tmp_path / "echo", clock=clock, embedder=embedder, config=config)
    yield hs
    hs.close()


def test_an_echo_collapses_into_the_statement_when_the_echo_rule_is_on(echo_engine: Hindsight) -> None:
    engine = echo_engine
    _record(engine, "u:echo", [("user", "Heads up: I'm allergic to peanuts, quite severely."),
                               ("assistant", "Got it, I'll remember that you're allergic to peanuts."), *FILLER])
    res = engine.recall("Am I allergic to anything?", "u:echo", k=5, now=T0 + timedelta(days=2))
    peanut = [h for h in res.hits if "peanuts" in h.memory.content]
    assert len(peanut) == 1 and len(peanut[0].sources) == 1


def test_different_values_stay_separate(engine: Hindsight) -> None:
    _record(engine, "u:two", [("user", "I'm allergic to peanuts."), *FILLER,
                              ("user", "I'm also allergic to shellfish.")])
    res = engine.recall("Do I have any food allergies?", "u:two", k=5, now=T0 + timedelta(days=2))
    prompt = res.to_prompt()
    assert "peanuts" in prompt and "shellfish" in prompt
