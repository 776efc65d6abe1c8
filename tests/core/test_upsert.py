"""``upsert``: record under a key, or replace what the key holds, in one transaction."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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
    assert m.id in engine.vectors.ids("user:up3", "semantic")
    engine.upsert("I collect vintage fountain pens.", "user:up3", source_id="k", layer="semantic", kind="fact",
                  index=False)
    assert m.id not in engine.vectors.ids("user:up3", "semantic")
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


class _ReplaceWhileEmbedding:
    """The real embedder; while it embeds ``text`` the first time, another thread replaces the memory
    (its commit lands between the applier reading the old text and caching the old text's vector)."""

    def __init__(self, inner: Any, text: str, replace: Callable[[], None], replaced: Callable[[], bool]) -> None:
        self.inner, self.text, self.replace, self.replaced = inner, text, replace, replaced
        self.name, self.dim = inner.name, inner.dim
        self.thread: threading.Thread | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.inner.embed_documents(texts)
        if self.text in texts and self.thread is None:
            self.thread = threading.Thread(target=self.replace)
            self.thread.start()
            while not self.replaced():
                time.sleep(0.01)
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_a_replace_racing_the_embedding_of_the_old_text_leaves_the_new_vector(
    tmp_path: Path, clock: Any, embedder: Any
) -> None:
    old, new = "I play the violin every evening.", "My favourite food is spicy Sichuan hotpot."
    holder: dict[str, Hindsight] = {}

    def replace() -> None:
        holder["hs"].upsert(new, "user:race", source_id="k", layer="semantic", kind="fact")

    def replaced() -> bool:
        found = holder["hs"].find("user:race", source_ids=["k"])
        return bool(found) and found[0].content == new

    racing = _ReplaceWhileEmbedding(embedder, old, replace, replaced)
    with Hindsight(tmp_path / "data", clock=clock, embedder=racing) as hs:
        holder["hs"] = hs
        m = hs.upsert(old, "user:race", source_id="k", layer="semantic", kind="fact")
        assert racing.thread is not None
        racing.thread.join()
        cached = hs.store.get_embeddings(embedder.name, [m.id])[m.id]
        assert np.allclose(cached, embedder.embed_documents([new])[0], atol=1e-5)
        hits = hs.recall("what does the user like to eat?", "user:race", k=1).hits
        assert [h.memory.content for h in hits] == [new]
