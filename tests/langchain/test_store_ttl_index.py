"""HindsightStore takes LangGraph's ``index=`` (IndexConfig) and ``ttl=`` (TTLConfig) and implements
them: expiry, refresh on read, sweeping, indexed fields, and an embedder check."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import BaseStore

from hindsight_core import Hindsight, InvalidInputError
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_langchain import HindsightStore

from ..conftest import FixedClock


@pytest.fixture(scope="module")
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture(scope="module")
def timed(tmp_path_factory: pytest.TempPathFactory, embedder: E5Embedder, clock: FixedClock) -> Iterator[Hindsight]:
    engine = Hindsight(Path(tmp_path_factory.mktemp("ttl")), embedder=embedder, clock=clock)
    yield engine
    engine.close()


def _space() -> tuple[str, str]:
    return ("memories", uuid.uuid4().hex[:8])


def test_an_item_expires_and_a_read_restarts_its_clock(timed: Hindsight, clock: FixedClock) -> None:
    store = HindsightStore(timed, ttl={"refresh_on_read": True})
    assert isinstance(store, BaseStore) and store.supports_ttl
    ns = _space()
    store.put(ns, "diet", {"text": "Ana is vegan"}, ttl=1.0)  # minutes
    store.put(ns, "pet", {"text": "Ana has a cat"})  # no ttl: never expires
    clock.advance(seconds=40)
    assert store.get(ns, "diet") is not None  # read at 0:40 → expires at 1:40
    clock.advance(seconds=40)
    assert store.get(ns, "diet", refresh_ttl=False) is not None  # 1:20, still alive, clock not restarted
    clock.advance(seconds=30)
    assert store.get(ns, "diet") is None  # 1:50: expired, gone for readers before any sweep
    assert [i.key for i in store.search(ns)] == ["pet"]
    assert store.sweep_ttl() == 1
    assert [m.metadata["lg_item"]["key"] for m in timed.find(store.engine_namespace(ns))] == ["pet"]


def test_default_ttl_and_refresh_off(timed: Hindsight, clock: FixedClock) -> None:
    store = HindsightStore(timed, ttl={"default_ttl": 2.0, "refresh_on_read": False})
    ns = _space()
    store.put(ns, "k", {"text": "short lived"})
    clock.advance(seconds=90)
    assert [i.key for i in store.search(ns, query="short lived")] == ["k"]  # a read that does not refresh
    clock.advance(seconds=40)
    assert store.get(ns, "k") is None
    store.put(ns, "k", {"text": "again"})  # an expired key is written afresh
    item = store.get(ns, "k")
    assert item is not None and item.value == {"text": "again"} and item.created_at == item.updated_at


def test_bad_ttl_is_refused(timed: Hindsight) -> None:
    with pytest.raises(InvalidInputError):
        HindsightStore(timed, ttl={"default_ttl": -1})
    store = HindsightStore(timed)
    with pytest.raises(InvalidInputError):
        store.put(_space(), "k", {"text": "x"}, ttl=0)


def test_index_fields_choose_what_search_reads(hs: Hindsight) -> None:
    store = HindsightStore(hs, index={"dims": hs.embedder.dim, "fields": ["note"]})
    ns = _space()
    store.put(ns, "a", {"note": "Ana is allergic to peanuts", "tag": "health"})
    store.put(ns, "b", {"note": "Ana lives in Porto", "tag": "peanuts allergy peanuts"})
    hits = store.search(ns, query="what about the peanuts allergy", limit=1)
    assert [h.key for h in hits] == ["a"] and hits[0].score is not None


def test_index_must_describe_the_engines_embedder(hs: Hindsight, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="384 dimensions"):
        HindsightStore(hs, index={"dims": 1536})
    with pytest.raises(InvalidInputError, match="embedder="):
        HindsightStore(hs, index={"dims": 384, "embed": DeterministicFakeEmbedding(size=384)})
    model: Any = DeterministicFakeEmbedding(size=8)
    with Hindsight(tmp_path / "fake", embedder=model) as own:
        store = HindsightStore(own, index={"dims": 8, "embed": model, "fields": ["text"]})
        store.put(("x",), "k", {"text": "hello"})
        assert store.get(("x",), "k") is not None
