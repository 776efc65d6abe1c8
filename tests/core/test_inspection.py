"""The operator's read-only views (``hs.inspection``) keep to the namespace they are given, refuse bad
input before reading, and agree with what the sweep then does — on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from hindsight_core import Hindsight, InvalidInputError


def test_each_view_keeps_to_its_namespace(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    mine = hs.record("I am allergic to peanuts.", "user:a", session_id="s1")
    theirs = hs.record("I am allergic to shellfish.", "user:b", session_id="s1")
    assert set(hs.inspection.memories("user:a", [mine.id, theirs.id])) == {mine.id}
    assert set(hs.inspection.memories(None, [mine.id, theirs.id])) == {mine.id, theirs.id}
    assert [m.id for m in hs.inspection.latest("user:a", limit=10)] == [mine.id]
    assert [m.id for m in hs.inspection.search("user:a", text="allergic")] == [mine.id]
    assert hs.inspection.search("user:a", text="shellfish") == []
    assert hs.inspection.pending_index_work() == 0
    assert hs.holds_namespace("user:a") and not hs.holds_namespace("user:c")


def test_fading_lists_what_the_sweep_then_cools(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    idle = hs.record("The plumber comes on Tuesday.", "user:f")
    pinned = hs.record("Wi-Fi password: kiwi-42", "user:f", metadata={"pinned": True})
    hs.record("Unrelated note of another tenant.", "user:g")
    assert hs.inspection.fading("user:f", 1) == []
    later = hs.now() + timedelta(days=400)
    horizon = (later - hs.now()).days
    due = hs.inspection.fading("user:f", horizon)
    assert [m.id for m in due] == [idle.id]  # the pinned one never fades, the other tenant's is not listed
    clock.set(later)
    report = hs.sweep(dry_run=True, namespace="user:f")
    assert idle.id in report.cooled_ids and pinned.id not in report.cooled_ids


@pytest.mark.parametrize(
    "call",
    [
        lambda hs: hs.inspection.latest("bad namespace", limit=5),
        lambda hs: hs.inspection.latest("user:a", limit=5, status="sleeping"),
        lambda hs: hs.inspection.search("user:a", layer="dreams"),
        lambda hs: hs.inspection.memories("user:a", [123]),
        lambda hs: hs.inspection.fading("user{a}", 7),
        lambda hs: hs.holds_namespace(""),
    ],
)
def test_bad_input_is_refused(open_engine: Callable[[], Hindsight], call: Callable[[Hindsight], Any]) -> None:
    with pytest.raises(InvalidInputError):
        call(open_engine())
