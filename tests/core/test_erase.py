"""Forgetting is an erase: after ``forget`` / ``forget_namespace`` no table of the SQLite file and no
index holds the memory's content, vector or id — only a tombstone (id, namespace, time) does — and a
fact distilled only from erased episodes goes with them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.types import PERSISTENT_LAYERS, Layer

CATS = "I'm allergic to cats, they make me sneeze"
CATS_AGAIN = "As I said, I am allergic to cats"
TILES = "We decided to go with the blue tiles for the bathroom."
CITY = "I moved to Shanghai last weekend, the new flat is near Jing'an temple."
TOMBSTONES = "erased_memories"


@pytest.fixture
def hs(tmp_path: Path, embedder: object) -> Iterator[Hindsight]:
    engine = Hindsight(tmp_path / "data", embedder=embedder, background_consolidation=False)
    yield engine
    engine.close()


def _mentions(path: Path, needles: list[str | bytes]) -> dict[str, set[str]]:
    """``{needle: {"table.column", ...}}``: every text and blob cell of every table that contains it."""
    found: dict[str, set[str]] = {}
    conn = sqlite3.connect(str(path))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            for row in conn.execute(f"SELECT * FROM {table}"):
                for column, value in zip(columns, row, strict=True):
                    for needle in needles:
                        hit = (
                            isinstance(value, str) and isinstance(needle, str) and needle in value
                        ) or (isinstance(value, bytes) and isinstance(needle, bytes) and needle in value)
                        if hit:
                            key = needle if isinstance(needle, str) else f"<vector {len(needle)} bytes>"
                            found.setdefault(key, set()).add(f"{table}.{column}")
    finally:
        conn.close()
    return found


def _in_vector_index(hs: Hindsight, namespace: str) -> set[str]:
    return {mid for layer in PERSISTENT_LAYERS for mid in hs.vectors.ids(namespace, layer.value)}


def _sqlite(hs: Hindsight) -> Path:
    return hs.path / "hindsight.sqlite3"


def test_forget_erases_an_episode_and_the_fact_drawn_only_from_it(hs: Hindsight) -> None:
    ns = "user:erase"
    cats = hs.record(CATS, ns, session_id="s1", source_id="chat-1")
    city = hs.record(CITY, ns, session_id="s1")
    hs.consolidate(ns)
    facts = {m.content: m for m in hs.find(ns, layer=Layer.SEMANTIC)}
    fact = next(m for m in facts.values() if cats.id in m.source_ids)
    other = next(m for m in facts.values() if city.id in m.source_ids)
    vector = hs.store.get_embeddings(hs.embedder.name, [cats.id])[cats.id].tobytes()
    # recall logs exist, flushed and still buffered
    assert hs.recall("Am I allergic to anything?", ns).hits
    hs.flush_recall_log()
    assert hs.recall("Do I have any allergies?", ns).hits

    assert hs.forget(cats.id) is True
    hs.flush_recall_log()

    ids, contents = [cats.id, fact.id], [CATS, fact.content]
    mentions = _mentions(_sqlite(hs), [*ids, *contents, vector])
    assert mentions == {cats.id: {f"{TOMBSTONES}.memory_id"}, fact.id: {f"{TOMBSTONES}.memory_id"}}
    assert not set(ids) & _in_vector_index(hs, ns)
    ranked = hs.activation.top(ns, "episodic", 100) + hs.activation.top(ns, "semantic", 100)
    assert not set(ids) & {mid for mid, _ in ranked}
    # what was not derived from it stays, with its logs
    assert hs.get(city.id) is not None and hs.get(other.id) is not None
    assert hs.store.query("SELECT COUNT(*) FROM recall_log WHERE namespace = ?", (ns,))[0][0] == 2
    result = hs.recall("Am I allergic to anything?", ns)
    assert all("cats" not in h.memory.content for h in result.hits)
    # the caller's id is free again: recording it anew makes a new memory
    again = hs.record(CATS, ns, session_id="s2", source_id="chat-1")
    assert again.id != cats.id and hs.get(again.id) is not None


def test_forget_keeps_a_fact_that_has_other_sources(hs: Hindsight) -> None:
    ns = "user:erase2"
    first = hs.record(CATS, ns, session_id="s1")
    second = hs.record(CATS_AGAIN, ns, session_id="s2")
    hs.consolidate(ns)
    (fact,) = [m for m in hs.find(ns, layer=Layer.SEMANTIC) if first.id in m.source_ids]
    assert {first.id, second.id} <= set(fact.source_ids)

    assert hs.forget(first.id) is True

    kept = hs.get(fact.id)
    assert kept is not None and kept.source_ids == [second.id]
    assert _mentions(_sqlite(hs), [first.id, CATS]) == {first.id: {f"{TOMBSTONES}.memory_id"}}
    hit = next(h for h in hs.recall("Am I allergic to anything?", ns).hits if h.memory.id == fact.id)
    assert [s.id for s in hit.sources] == [second.id]


def test_forget_namespace_erases_every_trace(hs: Hindsight) -> None:
    ns, neighbour = "user:gone", "user:stays"
    hs.record(CATS, ns, session_id="s1", source_id="chat-1")
    hs.record(CITY, ns, session_id="s1")
    hs.record("I'm allergic to dogs", neighbour, session_id="s1")
    hs.consolidate(ns)
    hs.consolidate(neighbour)
    mine = hs.find(ns)
    assert len(mine) >= 4
    hs.recall("Am I allergic to anything?", ns)
    hs.recall("Am I allergic to anything?", neighbour)
    hs.flush_recall_log()
    vectors = hs.store.get_embeddings(hs.embedder.name, [m.id for m in mine])

    assert hs.forget_namespace(ns) == len(mine)

    ids = [m.id for m in mine]
    mentions = _mentions(_sqlite(hs), [*ids, *{m.content for m in mine}, *(v.tobytes() for v in vectors.values())])
    assert mentions == {mid: {f"{TOMBSTONES}.memory_id"} for mid in ids}
    assert _in_vector_index(hs, ns) == set()
    assert len(hs.find(neighbour)) >= 2


def test_a_vector_computed_for_an_erased_memory_is_not_cached(hs: Hindsight) -> None:
    """A recall snapshot (or another process) may still embed a memory erased meanwhile."""
    memory = hs.record(CATS, "user:late", session_id="s1")
    hs.forget(memory.id)
    hs.outbox.vectors_for([memory])
    assert hs.store.query("SELECT COUNT(*) FROM embeddings WHERE memory_id = ?", (memory.id,))[0][0] == 0


def test_an_episode_erased_during_consolidation_does_not_come_back_as_a_fact(
    tmp_path: Path, embedder: object
) -> None:
    from hindsight_core.lifecycle.rules import RuleExtractor

    class ForgetsMidway(RuleExtractor):
        """Extracts as usual, but the user erases the first episode before the batch is written."""

        engine: Hindsight | None = None

        def extract(self, episodes, context):  # type: ignore[no-untyped-def]
            result = super().extract(episodes, context)
            assert self.engine is not None and self.engine.forget(episodes[0].id)
            return result

    extractor = ForgetsMidway()
    with Hindsight(tmp_path / "data", embedder=embedder, background_consolidation=False,
                   extractor=extractor) as hs:
        extractor.engine = hs
        ns = "user:race"
        cats = hs.record(CATS, ns, session_id="s1")
        city = hs.record(CITY, ns, session_id="s1")
        hs.consolidate(ns)
        facts = hs.find(ns, layer=Layer.SEMANTIC)
        assert facts and all(f.source_ids == [city.id] for f in facts)
        assert _mentions(_sqlite(hs), [cats.id, "allergic to cats"]) == {cats.id: {f"{TOMBSTONES}.memory_id"}}


def test_forget_erases_an_archived_memory_from_its_archive_and_what_was_drawn_from_it(
    tmp_path: Path, embedder: object, clock: object
) -> None:
    ns = "user:archived"  # events: a standing fact (an allergy) would be held, not archived
    with Hindsight(tmp_path / "data", embedder=embedder, clock=clock, background_consolidation=False) as hs:
        tiles = hs.record(TILES, ns, session_id="s1")
        city = hs.record(CITY, ns, session_id="s1")
        hs.consolidate(ns)
        fact = next(m for m in hs.find(ns, layer=Layer.SEMANTIC) if tiles.id in m.source_ids)
        clock.advance(days=400)  # type: ignore[attr-defined]
        report = hs.sweep()
        assert {tiles.id, city.id} <= set(report.archived_ids)
        path = hs.archive_path(ns)
        assert TILES.encode() in path.read_bytes()

        assert hs.forget(tiles.id) is True
        assert hs.forget(tiles.id) is False  # gone everywhere now

        archived = path.read_bytes()
        assert tiles.id.encode() not in archived and TILES.encode() not in archived
        assert fact.id.encode() not in archived and fact.content.encode() not in archived
        assert CITY.encode() in archived  # the rest of the archive is untouched and whole
        mentions = _mentions(_sqlite(hs), [tiles.id, fact.id, TILES, fact.content])
        assert mentions == {tiles.id: {f"{TOMBSTONES}.memory_id"}, fact.id: {f"{TOMBSTONES}.memory_id"}}
        restored = hs.restore(path)
        assert restored.damaged == []
        assert {m.content for m in hs.find(ns, layer=Layer.EPISODIC)} == {CITY}
