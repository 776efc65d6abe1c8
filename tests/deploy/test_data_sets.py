"""Two data sets on one Redis and one Chroma server (issue 38): production and staging, two PostgreSQL
schemas, with the same user ids. Every name an index derives is scoped by the data set, so neither sees
nor deletes the other's entries, whatever one of them reconciles or forgets."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight_core import ForeignDataSetError, Hindsight
from hindsight_core.activation.redis import RedisActivationIndex
from hindsight_core.config import HindsightConfig
from hindsight_core.vectors.chroma import ChromaVectorIndex

from .conftest import ChromaServer

PRODUCTION = [
    "I'm allergic to peanuts, seriously allergic.",
    "My sister Anna lives in Lisbon and teaches chemistry.",
    "We decided to cap the renovation budget at 30,000 euros.",
]
STAGING = [
    "Test user: allergic to shellfish.",
    "Test user: my brother lives in Oslo.",
]


@pytest.fixture
def user() -> str:
    """The same user id in both data sets (unique to this run: the Redis is shared with other tests)."""
    return f"user:{uuid.uuid4().hex[:10]}"


@pytest.fixture
def servers(chroma_server: ChromaServer, redis_url: str, redis_client: Any) -> Iterator[dict[str, str]]:
    yield {"chroma_url": chroma_server.url, "redis_url": redis_url}


def _open(path: Path, database_url: str, servers: dict[str, str], embedder: Any, clock: Any,
          config: HindsightConfig) -> Hindsight:
    return Hindsight(path, database_url=database_url, embedder=embedder, clock=clock, config=config,
                     background_consolidation=False, **servers)


def _assert_whole(hs: Hindsight, user: str, ids: list[str]) -> None:
    """Both indexes hold exactly ``ids`` for the user, and recall finds the first through the index."""
    assert hs.vectors.ids(user, "episodic") == set(ids)
    assert hs.activation.ids(user, "episodic") == set(ids)
    result = hs.recall("What am I allergic to?", user)
    assert result.degraded == [] and result.memories[0].id == ids[0]


def _close_leaving_nothing(hs: Hindsight, redis_client: Any) -> None:
    """Close, and leave the shared Redis as it was: every key under the data set's own prefix goes
    (after closing, which flushes what recall reinforced)."""
    prefix = hs.activation.prefix  # type: ignore[attr-defined]
    hs.close()
    for key in redis_client.scan_iter(f"{prefix}:*"):
        redis_client.delete(key)


@pytest.mark.redis
def test_one_data_set_reconciling_and_forgetting_leaves_the_others_entries_alone(
    tmp_path: Path, servers: dict[str, str], postgres_url: str, other_postgres_url: str, redis_client: Any,
    user: str, embedder: Any, clock: Any, index_recall: HindsightConfig,
) -> None:
    production = _open(tmp_path / "production", postgres_url, servers, embedder, clock, index_recall)
    staging = _open(tmp_path / "staging", other_postgres_url, servers, embedder, clock, index_recall)
    try:
        kept = [production.record(text, user).id for text in PRODUCTION]
        tried = [staging.record(text, user).id for text in STAGING]
        _assert_whole(staging, user, tried)
        assert staging.reconcile(verify=True).failed == 0  # compares the index with staging's store
        _assert_whole(production, user, kept)
        staging.forget_namespace(user)
        _assert_whole(production, user, kept)
        assert staging.vectors.ids(user, "episodic") == set() and staging.activation.ids(user, "episodic") == set()
        production.close()
        production = _open(tmp_path / "production", postgres_url, servers, embedder, clock, index_recall)
        _assert_whole(production, user, kept)
        assert production.reconcile(verify=True).failed == 0
        _assert_whole(production, user, kept)
    finally:
        for hs in (production, staging):
            _close_leaving_nothing(hs, redis_client)


@pytest.mark.redis
@pytest.mark.parametrize("shared", ["vectors", "activation"])
def test_an_index_prefix_another_data_set_owns_is_refused_and_left_alone(
    tmp_path: Path, chroma_server: ChromaServer, redis_url: str, redis_prefix: str, postgres_url: str,
    other_postgres_url: str, user: str, embedder: Any, clock: Any, index_recall: HindsightConfig, shared: str,
) -> None:
    """Indexes passed in keep the prefix they were given: the first data set's marker claims it, and a
    second data set opened on it is refused before it touches anything."""

    def indexes(name: str) -> dict[str, Any]:
        return {
            "vector_index": ChromaVectorIndex(url=chroma_server.url,
                                              collection_prefix="shared" if shared == "vectors" else name),
            "activation_index": RedisActivationIndex(
                url=redis_url, prefix=redis_prefix if shared == "activation" else f"{redis_prefix}:{name}"),
        }

    with Hindsight(tmp_path / "production", database_url=postgres_url, embedder=embedder, clock=clock,
                   config=index_recall, background_consolidation=False, **indexes("production")) as production:
        kept = [production.record(text, user).id for text in PRODUCTION]
        with pytest.raises(ForeignDataSetError, match=r"belong to data set .* not to this engine's"):
            Hindsight(tmp_path / "staging", database_url=other_postgres_url, embedder=embedder, clock=clock,
                      background_consolidation=False, **indexes("staging"))
        _assert_whole(production, user, kept)
        assert production.reconcile(verify=True).failed == 0
        _assert_whole(production, user, kept)


@pytest.mark.redis
def test_entries_under_the_unscoped_names_of_an_earlier_version_are_taken_over(
    tmp_path: Path, servers: dict[str, str], postgres_url: str, redis_client: Any, user: str, embedder: Any,
    clock: Any, index_recall: HindsightConfig,
) -> None:
    """A server as a version before issue 38 left it: the data set's entries under the names without the
    data set, beside another data set's entries of the same user. Opened, the engine rebuilds its own
    names from the store and removes its entries from the old names, including one it erased whose
    delete never reached them; the other data set's entries stay."""
    production = _open(tmp_path / "production", postgres_url, servers, embedder, clock, index_recall)
    kept = [production.record(text, user).id for text in PRODUCTION]
    erased = production.record("My PIN is 4711.", user).id
    production.forget(erased)
    dataset = production.store.dataset_id()
    vectors = production.store.get_embeddings(production.embedder.name, kept)
    keys = dict(production.activation.top(user, "episodic", 10))
    scoped_vectors, scoped_activation = production.vectors, production.activation
    production.close()
    legacy_vectors = ChromaVectorIndex(url=servers["chroma_url"])  # the old names: prefix "hindsight" alone
    legacy_activation = RedisActivationIndex(url=servers["redis_url"])
    foreign = "01HZZZZZZZZZZZZZZZZZZZZZZZ"  # another data set's memory of the same user
    pin, other = embedder.embed_documents(["My PIN is 4711.", "Another data set's memory"])
    legacy_vectors.upsert(user, "episodic", [*kept, erased, foreign],
                          np.stack([*(vectors[i] for i in kept), pin, other]), ["turn"] * 5)
    legacy_activation.upsert(user, "episodic", [*keys.items(), (erased, 1.0), (foreign, 1.0)])
    redis_client.set(f"hindsight:epoch:{dataset}", "1")  # that version's marker
    scoped_vectors.reset_layer("episodic")  # and nothing under the new names yet
    scoped_vectors._client.delete_collection(scoped_vectors.marker)  # type: ignore[attr-defined]
    scoped_activation.drop_namespace(user, ["episodic"])
    redis_client.delete(scoped_activation.marker)  # type: ignore[attr-defined]
    try:
        production = _open(tmp_path / "production", postgres_url, servers, embedder, clock, index_recall)
        _assert_whole(production, user, kept)
        assert legacy_vectors.ids(user, "episodic") == {foreign}
        assert legacy_activation.ids(user, "episodic") == {foreign}
        assert not redis_client.exists(f"hindsight:epoch:{dataset}")
        production.close()
        production = _open(tmp_path / "production", postgres_url, servers, embedder, clock, index_recall)
        _assert_whole(production, user, kept)  # marked: opened again, nothing is rebuilt
    finally:
        _close_leaving_nothing(production, redis_client)
        legacy_activation.drop_namespace(user, ["episodic"])
        legacy_vectors.close()
        legacy_activation.close()
