"""``pin``: a memory that must not go cold while it holds (where a key was left) never fades out; the
sweep passes it by, a cooled one comes back, ``unpin`` lets it fade again. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from hindsight_core import Hindsight, InvalidInputError, MemoryArchivedError, MemoryNotFoundError, Status

NS = "user:pia"


def test_a_pinned_memory_outlives_the_sweep_that_archives_its_neighbour(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    # two events (a standing fact, such as an key, is held without a pin: tests/lifecycle/test_standing.py)
    key = hs.record("Yesterday I left my spare key under the blue flowerpot.", NS, session_id="s1")
    film = hs.record("We watched a film about cats at the cinema yesterday.", NS, session_id="s1")
    pinned = hs.pin(key.id, namespace=NS)
    assert pinned.pinned and hs.get(key.id) == pinned
    assert hs.pin(key.id) == pinned  # already pinned: nothing changes

    clock.advance(days=200)
    report = hs.sweep()
    assert film.id in report.archived_ids  # idle past the archive age: cooled and archived in one pass
    assert key.id not in report.cooled_ids and key.id not in report.archived_ids
    assert [m.id for m in hs.find(NS)] == [key.id]
    assert "flowerpot" in hs.recall("Where did I leave my spare key?", NS, track=False).to_prompt()

    unpinned = hs.unpin(key.id, namespace=NS)
    assert not unpinned.pinned and "pinned" not in unpinned.metadata
    clock.advance(days=400)
    hs.sweep()
    hs.sweep()
    assert hs.find(NS) == []


def test_pinning_a_cooled_memory_brings_it_back_to_recall(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    fact = hs.record("The user is allergic to shellfish.", NS, layer="semantic", kind="fact")
    hs.demote(fact.id)
    clock.advance(days=31)
    assert hs.sweep().cooled_ids == [fact.id]
    back = hs.pin(fact.id)
    assert (back.status, back.pinned) == (Status.ACTIVE, True)
    assert fact.id in [h.memory.id for h in hs.recall("Is the user allergic to anything?", NS, track=False).hits]


def test_another_namespace_an_archived_memory_and_bad_input_change_nothing(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    mine = hs.record("I work night shifts.", NS)
    gone = hs.record("I had toast this morning.", NS)
    hs.record("Something of Eve's.", "user:eve")
    with pytest.raises(MemoryNotFoundError, match="user:eve"):
        hs.pin(mine.id, namespace="user:eve")
    with pytest.raises(MemoryNotFoundError):
        hs.pin("01HZZZZZZZZZZZZZZZZZZZZZZZ")
    for bad in ({"memory_id": ""}, {"memory_id": 7}, {"memory_id": mine.id, "namespace": "not a namespace"}):
        with pytest.raises(InvalidInputError):
            hs.pin(**bad)
    assert hs.get(mine.id) == mine
    clock.advance(days=400)
    hs.sweep()
    hs.sweep()
    with pytest.raises(MemoryArchivedError, match="archived"):
        hs.pin(gone.id)


def test_the_async_twins(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    memory = hs.record("I take my coffee black.", NS)

    async def run() -> tuple[bool, bool]:
        pinned = await hs.apin(memory.id, namespace=NS)
        unpinned = await hs.aunpin(memory.id, namespace=NS)
        return pinned.pinned, unpinned.pinned

    assert asyncio.run(run()) == (True, False)
