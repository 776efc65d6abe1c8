"""``update`` and ``history``: an edit keeps the id, is atomic and leaves the old text as history; the
history lists edits and the supersedes chain with times. On SQLite and on PostgreSQL (the history table
and its erase come from the store)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from hindsight_core import BackendUnavailableError, Hindsight, InvalidInputError, MemoryNotFoundError
from hindsight_core.embeddings.e5 import E5Embedder


def test_update_keeps_the_id_reindexes_and_keeps_the_old_text(
    open_engine: Callable[[], Hindsight], clock: Any, embedder: E5Embedder
) -> None:
    hs = open_engine()
    m = hs.record("I live in Berlin and work as a nurse.", "user:e", session_id="s1", metadata={"src": "chat"})
    hs.record("My cat is called Mochi.", "user:e", session_id="s1")
    assert hs.recall("which city do I live in?", "user:e").hits[0].memory.id == m.id  # snapshot built
    created = clock.current
    clock.advance(days=2)
    updated = hs.update(m.id, "I moved to Lisbon and work as a teacher.", namespace="user:e")

    assert updated.id == m.id and updated.created_at == m.created_at and updated.updated_at == clock.current
    assert (updated.content, updated.metadata, updated.session_id) == (
        "I moved to Lisbon and work as a teacher.", {"src": "chat"}, "s1")
    assert hs.get(m.id) == updated
    # the cached vector and the vector index hold the new text
    cached = hs.store.get_embeddings(embedder.name, [m.id])[m.id]
    assert np.allclose(cached, embedder.embed_documents([updated.content])[0], atol=1e-5)
    assert hs.stats().outbox_pending == 0
    # recall (its snapshot followed the change log) finds the new text by meaning and by keyword
    hits = hs.recall("where do I live now, Lisbon?", "user:e").hits
    assert hits[0].memory.id == m.id and hits[0].memory.content == updated.content
    assert all("Berlin" not in h.memory.content for h in hits)

    history = hs.history(m.id, namespace="user:e")
    assert (history.memory.id, history.memory.content) == (m.id, updated.content)
    assert [(e.old_content, e.new_content, e.at) for e in history.edits] == [
        ("I live in Berlin and work as a nurse.", updated.content, clock.current)]
    assert history.text_at(created) == "I live in Berlin and work as a nurse."
    assert history.text_at(clock.current) == updated.content
    assert history.text_at(created - timedelta(seconds=1)) is None

    clock.advance(hours=1)
    porto = hs.update(m.id, "I moved to Porto.", namespace="user:e")
    assert [e.new_content for e in hs.history(m.id).edits] == [updated.content, "I moved to Porto."]
    clock.advance(hours=1)
    assert hs.update(m.id, "I moved to Porto.").updated_at == porto.updated_at  # the same text: no edit
    assert len(hs.history(m.id).edits) == 2

    hs.close()  # the edits are durable
    again = open_engine()
    assert [e.old_content for e in again.history(m.id).edits] == [
        "I live in Berlin and work as a nurse.", updated.content]


def test_bad_updates_change_nothing(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    m = hs.record("I am allergic to peanuts.", "user:a")
    other = hs.record("I collect stamps.", "user:b")
    before = hs.find("user:a") + hs.find("user:b")
    with pytest.raises(MemoryNotFoundError, match="in namespace 'user:a'"):
        hs.update(other.id, "I collect coins.", namespace="user:a")  # another tenant's id
    with pytest.raises(MemoryNotFoundError):
        hs.update("01HZZZZZZZZZZZZZZZZZZZZZZZ", "text")
    for bad in ("", "   ", None, 42):
        with pytest.raises(InvalidInputError):
            hs.update(m.id, bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        hs.update(m.id, "x" * (hs.config.write.max_content_chars + 1))
    with pytest.raises(InvalidInputError):
        hs.update(m.id, "fine", namespace="bad namespace")
    assert hs.find("user:a") + hs.find("user:b") == before
    assert hs.history(m.id).edits == [] and hs.history(other.id).edits == []
    with pytest.raises(MemoryNotFoundError):
        hs.history(other.id, namespace="user:a")


def test_an_update_failing_inside_its_transaction_leaves_no_edit(
    open_engine: Callable[[], Hindsight], monkeypatch: pytest.MonkeyPatch
) -> None:
    hs = open_engine()
    m = hs.record("The meeting is on Monday.", "user:r")

    def disk_gone(ids: object) -> None:  # the last statement of the unit of work fails
        raise BackendUnavailableError("disk I/O error")

    monkeypatch.setattr(hs.store, "drop_embeddings", disk_gone)
    with pytest.raises(BackendUnavailableError):
        hs.update(m.id, "The meeting is on Tuesday.")
    monkeypatch.undo()
    assert hs.get(m.id) == m and hs.history(m.id).edits == []
    assert hs.recall("when is the meeting?", "user:r").hits[0].memory.content == "The meeting is on Monday."


def test_history_follows_the_supersedes_chain_both_ways(open_engine: Callable[[], Hindsight], clock: Any) -> None:
    hs = open_engine()
    v1 = hs.add_procedure("user asks for a refund", ["check the order number"], "agent:s")
    t1 = clock.advance(days=1)
    v2 = hs.add_procedure("user asks for a refund", ["check the order number", "check the amount"], "agent:s")
    t2 = clock.advance(days=1)
    v3 = hs.add_procedure("user asks for a refund", ["check the order", "check the amount", "refund"], "agent:s")
    assert len({v1.id, v2.id, v3.id}) == 3

    middle = hs.history(v2.id)
    assert [(link.memory.id, link.at) for link in middle.supersedes] == [(v1.id, t1)]
    assert [(link.memory.id, link.at) for link in middle.superseded_by] == [(v3.id, t2)]
    first = hs.history(v1.id, namespace="agent:s")
    assert first.supersedes == [] and [link.memory.id for link in first.superseded_by] == [v2.id, v3.id]
    assert [link.at for link in first.superseded_by] == [t1, t2]
    last = hs.history(v3.id)
    assert [link.memory.id for link in last.supersedes] == [v1.id, v2.id] and last.superseded_by == []


def test_forget_erases_the_edit_history(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    m = hs.record("My PIN is 4711.", "user:f")
    hs.update(m.id, "My PIN is 0815.")
    assert hs.forget(m.id)
    rows = hs.store.query("SELECT COUNT(*) FROM memory_history WHERE memory_id = ?", (m.id,))
    assert rows[0][0] == 0
    with pytest.raises(MemoryNotFoundError):
        hs.history(m.id)


async def test_async_twins(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    m = await hs.arecord("I drink green tea.", "user:t")
    assert (await hs.aupdate(m.id, "I drink black coffee.")).content == "I drink black coffee."
    assert [e.old_content for e in (await hs.ahistory(m.id)).edits] == ["I drink green tea."]


def test_export_and_import_carry_the_edit_history(
    open_engine: Callable[[], Hindsight], clock: Any, tmp_path: Any, embedder: Any
) -> None:
    hs = open_engine()
    m = hs.record("I live in Berlin.", "user:x")
    moment = clock.advance(days=1)
    clock.advance(days=1)
    hs.update(m.id, "I live in Lisbon.")
    records = list(hs.export_namespace("user:x"))
    assert [r["type"] for r in records].count("edit") == 1
    with Hindsight(tmp_path / "elsewhere", clock=clock, embedder=embedder, background_consolidation=False) as other:
        other.import_namespace(records)
        assert [(e.old_content, e.new_content) for e in other.history(m.id).edits] == [
            ("I live in Berlin.", "I live in Lisbon.")]
        then = other.recall("which city do I live in?", "user:x", as_of=moment)
        assert [h.memory.content for h in then.hits] == ["I live in Berlin."]  # embedded again: no vector kept
        assert other.import_namespace(records).memories == 0 and len(other.history(m.id).edits) == 1
        bad = [*records, {"type": "edit", "memory_id": "01HZZZZZZZZZZZZZZZZZZZZZZZ", "old_content": "a",
                          "new_content": "b", "at": 1.0}]
        with pytest.raises(InvalidInputError):
            other.import_namespace(bad)
