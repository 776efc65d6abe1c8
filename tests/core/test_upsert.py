"""``upsert``: record under a key, or replace what the key holds, in one transaction."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight_core import Hindsight, InvalidInputError


def test_upsert_replaces_in_place_and_reindexes_the_new_text(engine: Hindsight, clock, embedder) -> None:
    first = engine.upsert("I play the violin every evening.", "user:up", source_id="hobby", layer="semantic",
                          kind="fact", metadata={"v": 1})
    clock.advance(hours=1)
    second = engine.upsert("My favourite food is spicy Sichuan hotpot.", "user:up", source_id="hobby",
                           layer="semantic", kind="fact", metadata={"v": 2}, importance=5)
    assert second.id == first.id and second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    stored = engine.find("user:up", source_ids=["hobby"])
    assert len(stored) == 1
    m = stored[0]
    assert (m.content, m.metadata, m.importance) == ("My favourite food is spicy Sichuan hotpot.", {"v": 2}, 5)
    assert m.fingerprint != first.fingerprint and m.entities == second.entities
    # the cached embedding is the new text's, not the old one's (it is keyed by memory id)
    cached = engine.store.get_embeddings(embedder.name, [m.id])[m.id]
    assert np.allclose(cached, embedder.embed_documents([m.content])[0], atol=1e-5)
    assert engine.store.pending_count() == 0
    hits = engine.recall("what does the user like to eat?", "user:up", k=3).hits
    assert [h.memory.id for h in hits][:1] == [m.id]
    assert hits[0].memory.content == m.content


def test_upsert_of_a_new_key_records_it_once(engine: Hindsight) -> None:
    a = engine.upsert("The user owns a black cat named Mochi.", "user:up2", source_id="pet")
    again = engine.record("The user owns a black cat named Mochi.", "user:up2", source_id="pet")
    assert again.id == a.id
    assert engine.stats("user:up2").total == 1


def test_upsert_can_take_an_item_out_of_the_index(engine: Hindsight) -> None:
    m = engine.upsert("I collect vintage fountain pens.", "user:up3", source_id="k", layer="semantic", kind="fact")
    assert m.id in engine.vectors.ids("semantic", "user:up3")
    engine.upsert("I collect vintage fountain pens.", "user:up3", source_id="k", layer="semantic", kind="fact",
                  index=False)
    assert m.id not in engine.vectors.ids("semantic", "user:up3")
    assert engine.get(m.id) is not None


def test_bad_upsert_changes_nothing(engine: Hindsight) -> None:
    m = engine.upsert("I live in Lisbon.", "user:up4", source_id="home")
    with pytest.raises(InvalidInputError):
        engine.upsert("", "user:up4", source_id="home")
    with pytest.raises(InvalidInputError):
        engine.upsert("I live in Porto.", "user:up4", source_id=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        engine.upsert("I live in Porto.", "user:up4", source_id="home", metadata={"x": object()})
    assert [x.content for x in engine.find("user:up4")] == [m.content]


async def test_aupsert(engine: Hindsight) -> None:
    a = await engine.aupsert("I am learning Korean.", "user:up5", source_id="lang")
    b = await engine.aupsert("I am learning Japanese.", "user:up5", source_id="lang")
    assert a.id == b.id and engine.get(a.id).content == "I am learning Japanese."  # type: ignore[union-attr]
