"""A caller's id (``record(source_id=...)``) is never resolved as a memory id: provenance (``source_ids``)
holds only memory ids of the same namespace, and every read that resolves ids stays in its namespace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core import Hindsight, MemoryNotFoundError
from hindsight_core.types import Layer

PIN = "My bank PIN is 4321"


@pytest.fixture
def hs(tmp_path: Path, embedder: object) -> Iterator[Hindsight]:
    engine = Hindsight(tmp_path / "data", embedder=embedder, background_consolidation=False)
    yield engine
    engine.close()


def test_a_source_id_equal_to_another_tenants_memory_id_pulls_nothing_in(hs: Hindsight) -> None:
    victim = hs.record(PIN, "user:1")
    mine = hs.record("I'm allergic to cats", "user:10", session_id="a", source_id=victim.id)
    assert (mine.source_id, mine.source_ids) == (victim.id, [])
    hs.consolidate("user:10")
    (fact,) = hs.find("user:10", layer=Layer.SEMANTIC)
    assert fact.source_ids == [mine.id]  # provenance: the episode, not the caller's string

    result = hs.recall("Am I allergic to anything?", "user:10")
    assert result.hits
    assert "4321" not in result.to_prompt()
    assert all(s.namespace == "user:10" for h in result.hits for s in h.sources)
    assert all(s.id != victim.id for h in result.hits for s in h.sources)
    # id reads that name a namespace stay in it
    assert hs.get(victim.id, namespace="user:10") is None
    with pytest.raises(MemoryNotFoundError):
        hs.feedback(victim.id, True, namespace="user:10")


def test_opening_an_older_store_separates_caller_ids_from_provenance(hs: Hindsight, embedder: object) -> None:
    """Stores written before the fix copied the caller's id into ``source_ids`` (and consolidation
    copied it on into facts); the migration takes it out, keeping memory ids of the same namespace."""
    victim = hs.record(PIN, "user:1")
    episode = hs.record("I'm allergic to cats", "user:10", session_id="a", source_id=victim.id)
    hs.consolidate("user:10")
    (fact,) = hs.find("user:10", layer=Layer.SEMANTIC)
    path = hs.path
    # what the old code stored
    hs.store.execute("UPDATE memories SET source_ids = ? WHERE id = ?", (json.dumps([victim.id]), episode.id))
    hs.store.execute("UPDATE memories SET source_ids = ? WHERE id = ?", (json.dumps([episode.id, victim.id]), fact.id))
    hs.store.execute("DROP TABLE erased_memories")
    hs.store.execute("DELETE FROM schema_migrations WHERE name = '0005_erase_tombstones'")
    hs.close()

    with Hindsight(path, embedder=embedder, background_consolidation=False) as reopened:
        assert reopened.get(episode.id).source_ids == []  # type: ignore[union-attr]
        assert reopened.get(fact.id).source_ids == [episode.id]  # type: ignore[union-attr]
        assert reopened.get(episode.id).source_id == victim.id  # type: ignore[union-attr]
        result = reopened.recall("Am I allergic to anything?", "user:10")
        assert result.hits and "4321" not in result.to_prompt()
