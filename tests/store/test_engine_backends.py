"""The engine on each relational backend: write path (idempotent source ids, upsert), recall, transcripts,
consolidation and forget_namespace give the same results on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hindsight_core import Hindsight, Layer, UnknownNamespaceError
from hindsight_core.embeddings.e5 import E5Embedder


@pytest.fixture(params=["sqlite", "postgres"])
def open_engine(
    request: pytest.FixtureRequest, tmp_path: Path, clock: object, embedder: E5Embedder
) -> Iterator[Callable[[], Hindsight]]:
    """Opens an engine on the backend (again after ``close``: a restart on the same data)."""
    url = str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else None
    opened: list[Hindsight] = []

    def make() -> Hindsight:
        hs = Hindsight(tmp_path / "data", database_url=url, clock=clock, embedder=embedder)  # type: ignore[arg-type]
        opened.append(hs)
        return hs

    yield make
    for hs in opened:
        hs.close()


def test_write_recall_transcript_consolidate_forget(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    first = hs.record("My sister Mei lives in Chengdu and teaches piano.", "user:a", session_id="s1", source_id="d1")
    again = hs.record("My sister Mei lives in Chengdu and teaches piano.", "user:a", session_id="s1", source_id="d1")
    assert again.id == first.id  # the source id is an idempotency key
    hs.record("I am allergic to peanuts.", "user:a", session_id="s1", source_id="d2")
    hs.record("Unrelated tenant memory about gardening.", "user:b", session_id="x")
    hits = hs.recall("where does my sister live?", "user:a").hits
    assert hits and hits[0].memory.id == first.id
    assert all(h.memory.namespace == "user:a" for h in hits)

    hs.edit_transcript("user:a", "chat", lambda old: [*(old or []), {"role": "user", "content": "hi"}])
    assert hs.transcript("user:a", "chat") == [{"role": "user", "content": "hi"}]

    report = hs.consolidate("user:a")
    assert report.status == "done" and report.episodes >= 2
    assert hs.store.select("namespace = ? AND layer = ?", ("user:a", Layer.SEMANTIC.value))
    assert hs.stats("user:a").namespaces["user:a"].layers["episodic"].by_status["active"] >= 2
    hs.close()

    reopened = open_engine()  # everything acknowledged is there after a restart
    assert reopened.get(first.id) is not None
    assert reopened.transcript("user:a", "chat") == [{"role": "user", "content": "hi"}]
    assert reopened.recall("where does my sister live?", "user:a").hits[0].memory.id == first.id

    assert [m.id for m in reopened.find("user:a", source_ids=["d1"])] == [first.id]
    swept = reopened.sweep()  # nothing is idle yet: the sweep's queries run and change nothing
    assert (swept.cooled, swept.archived, swept.errors) == (0, 0, {})
    assert reopened.reconcile(verify=True).failed == 0
    exported = list(reopened.export_namespace("user:a"))
    assert {r["memory"]["content"] for r in exported if r["type"] == "memory"} == {
        m.content for m in reopened.store.select("namespace = ?", ["user:a"])
    }
    assert [r["key"] for r in exported if r["type"] == "transcript"] == ["chat"]

    assert reopened.forget_namespace("user:a") >= 3
    with pytest.raises(UnknownNamespaceError):
        reopened.stats("user:a")
    assert reopened.transcript("user:a", "chat") is None
    assert reopened.recall("where does my sister live?", "user:a").hits == []
    assert [h.memory.namespace for h in reopened.recall("gardening", "user:b").hits] == ["user:b"]
    assert reopened.stats().outbox_pending == 0
