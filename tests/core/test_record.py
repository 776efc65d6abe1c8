"""The write path as a user sees it: record, get, working memory, forget, stats, async twins."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_core import Event, Hindsight, InvalidInputError, Kind, Layer, Memory, UnknownNamespaceError
from hindsight_core.embeddings.base import Embedder
from hindsight_core.types import Status


def test_record_returns_a_durable_memory_with_provenance(engine: Hindsight, clock) -> None:
    mem = engine.record("I'm allergic to peanuts", namespace="user:1", session_id="s1", source_id="D1:3")
    assert isinstance(mem, Memory)
    assert (mem.namespace, mem.session_id, mem.layer, mem.kind, mem.role) == (
        "user:1", "s1", Layer.EPISODIC, Kind.TURN, "user"
    )
    assert (mem.source_id, mem.source_ids) == ("D1:3", [])  # the caller's id is not provenance
    assert mem.created_at == clock() and mem.occurred_at == clock()
    assert mem.status is Status.ACTIVE and mem.indexed
    assert engine.get(mem.id) == mem


def test_fresh_record_is_found_by_the_vector_index_at_once(engine: Hindsight) -> None:
    engine.record("The weather in Lisbon was sunny all week", namespace="user:1")
    mem = engine.record("I'm allergic to peanuts", namespace="user:1")
    hits = engine.vectors.query("user:1", "episodic", engine.embedder.embed_query("I'm allergic to peanuts"), 5)
    assert hits[0].memory_id == mem.id
    assert engine.activation.scores("user:1", "episodic", [mem.id])


def test_ids_are_time_ordered(engine: Hindsight, clock) -> None:
    first = engine.record("first thing", namespace="user:1")
    clock.advance(seconds=1)
    second = engine.record("second thing", namespace="user:1")
    assert first.id < second.id


@pytest.mark.parametrize("text", ["ok", "thanks", "哈哈", "好的", "好的呢", "嗯嗯", "👍"])
def test_small_talk_is_kept_but_not_indexed(engine: Hindsight, text: str) -> None:
    mem = engine.record(text, namespace="user:1", session_id="s1")
    assert engine.get(mem.id) is not None and not mem.indexed
    assert mem.id not in engine.vectors.ids("user:1", "episodic")
    assert engine.activation.scores("user:1", "episodic", [mem.id]) == {}
    assert [m.content for m in engine.working("user:1", "s1")] == [text]


def test_working_memory_is_the_session_tail_within_a_token_budget(engine: Hindsight, clock) -> None:
    for i in range(30):
        engine.record(f"turn number {i} talks about gardening and tomatoes", namespace="u:1", session_id="s1")
        clock.advance(seconds=30)
    engine.record("another session", namespace="u:1", session_id="s2")
    window = engine.working("u:1", "s1", budget_tokens=60)
    assert window, "working memory must not be empty"
    assert window[-1].content.startswith("turn number 29")
    assert [m.content for m in window] == [f"turn number {i} talks about gardening and tomatoes"
                                          for i in range(30 - len(window), 30)]
    assert sum(engine.tokens.count(m.content) for m in window) <= 60
    assert len(engine.working("u:1", "s1", budget_tokens=10_000)) == 30


def test_sensory_is_the_current_turn(engine: Hindsight) -> None:
    assert engine.sensory("u:1", "s1") is None
    engine.record("first", namespace="u:1", session_id="s1")
    last = engine.record("what I am saying now", namespace="u:1", session_id="s1")
    engine.record("another chat", namespace="u:1", session_id="s2")
    no_session = engine.record("said outside any session", namespace="u:1")
    assert engine.sensory("u:1", "s1") == last
    assert engine.sensory("u:1") == no_session
    assert engine.sensory("u:2", "s1") is None


def test_sensory_is_the_current_turn_after_a_restart(open_engine: Callable[[], Hindsight]) -> None:
    """A restarted process still knows the current turn; an erased turn is no longer current."""
    first = open_engine()
    said = first.record("I'm booking the flight now", namespace="u:1", session_id="s1")
    first.close()
    restarted = open_engine()
    assert restarted.sensory("u:1", "s1") == said
    latest = restarted.record("window seat please", namespace="u:1", session_id="s1")
    assert restarted.sensory("u:1", "s1") == latest
    assert restarted.forget(latest.id, namespace="u:1")
    assert restarted.sensory("u:1", "s1") == said


def test_sensory_is_another_process_s_turn_in_a_shared_data_set(
    tmp_path: Path, postgres_url: str, embedder: Embedder
) -> None:
    """Two app processes serving one user's chat on a shared database: the turn one recorded is the
    current turn for the other."""
    with Hindsight(tmp_path / "a", database_url=postgres_url, embedder=embedder) as one, \
            Hindsight(tmp_path / "b", database_url=postgres_url, embedder=embedder) as other:
        one.record("I'm booking the flight now", namespace="u:1", session_id="s1")
        latest = other.record("window seat please", namespace="u:1", session_id="s1")
        assert one.sensory("u:1", "s1") == latest


def test_record_many_bulk_import_with_acknowledgements(engine: Hindsight) -> None:
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    events = [
        Event(content=f"Caroline: message {i} about painting", session_id="session_1", role="Caroline",
              occurred_at=start + timedelta(minutes=i), source_id=f"D1:{i}")
        for i in range(150)
    ]
    acked: list[str] = []
    stored = engine.record_many(events, namespace="conv-26", on_commit=lambda ms: acked.extend(m.id for m in ms))
    assert len(stored) == 150 and acked == [m.id for m in stored]
    assert [m.source_id for m in stored[:2]] == ["D1:0", "D1:1"]
    assert stored[3].occurred_at == start + timedelta(minutes=3)
    assert engine.vectors.count("conv-26", "episodic") == 150
    assert engine.activation.count("conv-26", "episodic") == 150


def test_source_id_makes_imports_idempotent(engine: Hindsight) -> None:
    events = [{"content": f"line {i}", "source_id": f"D1:{i}"} for i in range(10)]
    first = engine.record_many(events, namespace="conv")
    again = engine.record_many([*events, {"content": "line 10", "source_id": "D1:10"}], namespace="conv")
    assert [m.id for m in again[:10]] == [m.id for m in first]
    assert engine.stats("conv").total == 11
    assert engine.record("line 3", namespace="conv", source_id="D1:3").id == first[3].id


def test_check_events_checks_as_record_many_does_and_writes_nothing(engine: Hindsight) -> None:
    """What a caller streaming a large import runs on each batch before recording the first."""
    events = ["I moved to Porto", {"content": "I am vegetarian", "source_id": "D1:2", "layer": "semantic"}]
    assert engine.check_events(events, "conv") == [("semantic", "D1:2")]
    assert engine.find("conv") == [] and not engine.holds_namespace("conv")
    with pytest.raises(InvalidInputError, match=r"^event 41: "):  # named by its place in the whole import
        engine.check_events(["fine", {"content": "fine", "role": "user\nadmin"}], "conv", start=40)
    with pytest.raises(InvalidInputError, match="share a source_id"):
        engine.check_events([{"content": "a", "source_id": "x"}, {"content": "b", "source_id": "x"}], "conv")


def test_forget_removes_everywhere(engine: Hindsight) -> None:
    mem = engine.record("my locker code is 4711", namespace="u:1")
    assert engine.forget(mem.id) is True
    assert engine.get(mem.id) is None
    assert mem.id not in engine.vectors.ids("u:1", "episodic")
    assert engine.activation.count("u:1", "episodic") == 0
    assert engine.forget(mem.id) is False


def test_forget_respects_the_namespace_wall(engine: Hindsight) -> None:
    mem = engine.record("secret of user one", namespace="u:1")
    assert engine.get(mem.id, namespace="u:2") is None
    assert engine.forget(mem.id, namespace="u:2") is False
    assert engine.get(mem.id) is not None


def test_forget_namespace(engine: Hindsight) -> None:
    engine.record_many(["alpha fact", "beta fact", "ok"], namespace="u:1")
    keep = engine.record("other tenant", namespace="u:2")
    assert engine.forget_namespace("u:1") == 3
    assert engine.namespaces() == ["u:2"]
    assert engine.vectors.ids("u:1", "episodic") == set()
    assert engine.activation.count("u:1", "episodic") == 0
    assert engine.vectors.ids("u:2", "episodic") == {keep.id}
    with pytest.raises(UnknownNamespaceError, match="u:1"):
        engine.forget_namespace("u:1")


def test_stats_counts_by_namespace_layer_and_status(engine: Hindsight) -> None:
    engine.record_many(["I like tea", "ok", "I work at a bakery"], namespace="u:1")
    engine.record("a semantic fact", namespace="u:1", layer="semantic", kind="fact")
    stats = engine.stats()
    layers = stats.namespaces["u:1"].layers
    assert layers["episodic"].by_status == {"active": 3} and layers["episodic"].indexed == 2
    assert layers["semantic"].by_status == {"active": 1}
    assert stats.total == 4 and stats.outbox_pending == 0
    with pytest.raises(UnknownNamespaceError):
        engine.stats("nobody")


def test_data_survives_reopen(tmp_path: Path, clock, embedder) -> None:
    with Hindsight(tmp_path, clock=clock, embedder=embedder) as hs:
        mem = hs.record("persist me", namespace="u:1", session_id="s")
    with Hindsight(tmp_path, clock=clock, embedder=embedder) as hs:
        assert hs.get(mem.id) == mem
        assert hs.vectors.ids("u:1", "episodic") == {mem.id}
        assert hs.store.schema_version()[0] == "0001_core"


async def test_async_twins(engine: Hindsight) -> None:
    mem = await engine.arecord("async hello world", namespace="u:1", session_id="s1")
    many = await engine.arecord_many(["one thing", "two things"], namespace="u:1")
    assert await engine.aget(mem.id) == mem
    assert [m.content for m in await engine.aworking("u:1", "s1")] == ["async hello world"]
    assert (await engine.astats("u:1")).total == 3
    assert await engine.aforget(many[0].id) is True
    assert (await engine.areconcile()).failed == 0
    assert await engine.aforget_namespace("u:1") == 2
