"""Forgetting on request: ``demote`` ranks a memory below what is still wanted and lets the sweep take it
sooner, ``reinstate`` gives back what it had until the sweep archives it, and both are noted in
``history``. On SQLite and on PostgreSQL (the demotions table and its erase come from the store)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight, InvalidInputError, MemoryArchivedError, MemoryNotFoundError, Status
from hindsight_core.embeddings.e5 import E5Embedder

NS = "user:dana"
QUESTION = "what food do I like?"
FAVOURITE = "My favourite food is sushi."
ALSO = "I really love eating sushi for dinner."


def _ranked(hs: Hindsight, query: str = QUESTION, namespace: str = NS) -> list[str]:
    return [h.memory.id for h in hs.recall(query, namespace, track=False).hits]


def _three(hs: Hindsight) -> tuple[str, str]:
    favourite = hs.record(FAVOURITE, NS, session_id="s1").id
    also = hs.record(ALSO, NS, session_id="s1").id
    hs.record("My cat is called Mochi.", NS, session_id="s1")
    return favourite, also


def test_demote_ranks_the_memory_last_and_reinstate_ranks_it_first_again(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    favourite, also = _three(hs)
    before = hs.get(favourite)
    assert before is not None
    assert _ranked(hs) == [favourite, also]  # the query it answered best

    demoted = hs.demote(favourite, namespace=NS, reason="the user went vegetarian", by="agent:chef")
    assert _ranked(hs) == [also, favourite]
    assert hs.get(favourite) == demoted
    assert demoted.activation.log_at(clock.current.timestamp(), hs.config.activation.rate(demoted.layer)) <= (
        hs.config.lifecycle.demoted_log_activation + 1e-9)
    assert (demoted.content, demoted.status) == (FAVOURITE, Status.ACTIVE)  # kept, only weighed down

    clock.advance(hours=1)
    restored = hs.reinstate(favourite, namespace=NS)
    assert restored.activation == before.activation
    assert _ranked(hs) == [favourite, also]


def test_the_demotion_survives_a_reopen_and_history_shows_both_events(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    favourite, also = _three(hs)
    demoted_at = clock.current
    hs.demote(favourite, namespace=NS, reason="no longer true", by="agent:chef")
    hs.close()

    again = open_engine()
    assert _ranked(again) == [also, favourite]
    history = again.history(favourite, namespace=NS)
    assert history.demoted
    assert [(d.at, d.by, d.reason, d.reinstated_at) for d in history.demotions] == [
        (demoted_at, "agent:chef", "no longer true", None)]

    clock.advance(days=1)
    again.reinstate(favourite, namespace=NS)
    history = again.history(favourite)
    assert not history.demoted
    assert [(d.at, d.reinstated_at) for d in history.demotions] == [(demoted_at, clock.current)]
    assert _ranked(again) == [favourite, also]


def test_recall_does_not_reinforce_a_demoted_memory(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    favourite, _ = _three(hs)
    demoted = hs.demote(favourite)
    assert favourite in [h.memory.id for h in hs.recall(QUESTION, NS).hits]  # shown, low, and logged
    hs.flush_recall_log()
    after = hs.get(favourite)
    assert after is not None and after.activation == demoted.activation


def test_the_sweep_takes_a_demoted_fact_sooner_and_reinstate_after_the_archive_raises(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    kept = hs.record("The user is allergic to peanuts.", NS, layer="semantic", kind="fact")
    dropped = hs.record("The user works at the bakery.", NS, layer="semantic", kind="fact")
    hs.demote(dropped.id, namespace=NS)

    clock.advance(days=31)  # idle past cold_idle_days; a semantic memory decays slowly
    report = hs.sweep()
    assert report.cooled_ids == [dropped.id]
    cold = hs.get(dropped.id)
    assert cold is not None and cold.status == Status.COLD
    assert [m.status for m in [hs.get(kept.id)] if m] == [Status.ACTIVE]

    # still reversible while it is cold: active again, and recalled again
    hs.reinstate(dropped.id, namespace=NS)
    back = hs.get(dropped.id)
    assert back is not None and back.status == Status.ACTIVE
    assert dropped.id in _ranked(hs, "where does the user work?")

    hs.demote(dropped.id, namespace=NS)
    clock.advance(days=100)
    assert hs.sweep().archived_ids == [dropped.id]
    with pytest.raises(MemoryArchivedError, match="archived"):
        hs.reinstate(dropped.id, namespace=NS)
    with pytest.raises(MemoryArchivedError, match="archived"):
        hs.demote(dropped.id)
    assert issubclass(MemoryArchivedError, MemoryNotFoundError)
    assert [m.id for m in hs.find(NS)] == [kept.id]


def test_another_namespace_and_bad_input_change_nothing(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    favourite, also = _three(hs)
    hs.record("Something of Eve's.", "user:eve")
    before = hs.get(favourite)

    with pytest.raises(MemoryNotFoundError, match="user:eve"):
        hs.demote(favourite, namespace="user:eve")
    with pytest.raises(MemoryNotFoundError):
        hs.demote("01HZZZZZZZZZZZZZZZZZZZZZZZ")
    with pytest.raises(MemoryNotFoundError):
        hs.reinstate("01HZZZZZZZZZZZZZZZZZZZZZZZ")
    for bad in ({"memory_id": ""}, {"memory_id": 7}, {"memory_id": favourite, "reason": 7},
                {"memory_id": favourite, "by": ["x"]}, {"memory_id": favourite, "namespace": "not a namespace"}):
        with pytest.raises(InvalidInputError):
            hs.demote(**bad)
    assert hs.get(favourite) == before
    assert hs.history(favourite).demotions == []
    assert _ranked(hs) == [favourite, also]

    hs.demote(favourite)
    with pytest.raises(MemoryNotFoundError):
        hs.reinstate(favourite, namespace="user:eve")
    assert hs.history(favourite).demoted


def test_forget_erases_the_demotion_record_with_the_memory(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    favourite, _ = _three(hs)
    hs.demote(favourite, reason="a reason that names sushi")
    assert hs.forget(favourite, namespace=NS)
    with pytest.raises(MemoryNotFoundError):
        hs.reinstate(favourite)
    assert hs.store.query("SELECT COUNT(*) FROM memory_demotions WHERE memory_id = ?", (favourite,)) == [(0,)]


async def test_async_twins(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    favourite, also = _three(hs)
    await hs.ademote(favourite, namespace=NS)
    assert _ranked(hs) == [also, favourite]
    await hs.areinstate(favourite, namespace=NS)
    assert _ranked(hs) == [favourite, also]


def test_export_and_import_carry_the_demotion(
    open_engine: Callable[[], Hindsight], clock: Any, tmp_path: Path, embedder: E5Embedder
) -> None:
    hs = open_engine()
    favourite, also = _three(hs)
    hs.demote(favourite, reason="moved on", by="agent:chef")
    records = list(hs.export_namespace(NS))
    assert [r["type"] for r in records].count("demotion") == 1
    with Hindsight(tmp_path / "elsewhere", clock=clock, embedder=embedder, background_consolidation=False) as other:
        other.import_namespace(records)
        assert _ranked(other) == [also, favourite]
        assert [(d.by, d.reason) for d in other.history(favourite).demotions] == [("agent:chef", "moved on")]
        other.reinstate(favourite)
        assert _ranked(other) == [favourite, also]
        assert other.import_namespace(records).memories == 0 and len(other.history(favourite).demotions) == 1
        bad = [*records, {**records[-1], "status_before": "forgotten"}]
        with pytest.raises(InvalidInputError):
            other.import_namespace(bad)
