"""The vector channel of a small namespace is an exact scan of the snapshot's vectors
(``recall.exact_vector_max_memories``): it ranks what the Chroma index ranks, across layer selections
and with cold memories, the index is not read at or below the size and is above it, and a larger
namespace still falls back to the scan, flagged ``degraded``, when the index is unreachable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.errors import BackendUnavailableError
from hindsight_core.recall.channels import best_first
from hindsight_core.types import Layer, Status
from hindsight_core.vectors.chroma import ChromaVectorIndex
from tests.conftest import FixedClock

NS = "user:exact"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
EPISODES = [
    "I'm allergic to peanuts, seriously allergic.",
    "My sister Anna lives in Lisbon and teaches chemistry.",
    "We decided to cap the renovation budget at 30,000 euros.",
    "The dentist appointment is on the first Monday of April.",
    "Lily starts violin lessons next Monday after school.",
    "The boiler was serviced on Tuesday by the new plumber.",
    "Our flight to Porto leaves at 7:40 on Friday morning.",
    "I switched my running shoes to a wider model last month.",
    "The book club is reading a novel about a lighthouse keeper.",
    "My manager asked for the quarterly report by Thursday.",
    "We adopted a grey cat from the shelter and named her Miso.",
    "The car needs new winter tyres before December.",
]
FACTS = [
    "The user is allergic to peanuts.",
    "The user's sister Anna lives in Lisbon.",
    "The user has a cat called Miso.",
    "The user's daughter Lily plays the violin.",
]
COLD = ["Our old wifi password was hunter2-garden.", "The previous landlord's number ended in 4471."]
QUERIES = ["What am I allergic to?", "Where does my sister live?", "Tell me about the pets at home.",
           "What happens on Monday?", "What was the wifi password?"]


class CountingChroma(ChromaVectorIndex):
    """The real embedded Chroma index, counting its queries (and the layers queried); while ``down`` is
    set a query fails as an unreachable server would."""

    queries = 0
    down = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.layers_queried: list[str] = []

    def query(self, namespace: str, layer: str, *args: Any, **kwargs: Any) -> Any:
        if self.down:
            raise BackendUnavailableError("vector index: chroma is down")
        self.queries += 1
        self.layers_queried.append(layer)
        return super().query(namespace, layer, *args, **kwargs)


@pytest.fixture
def chroma(tmp_path: Path) -> CountingChroma:
    return CountingChroma(tmp_path / "chroma")


@pytest.fixture
def hs(tmp_path: Path, embedder: Any, chroma: CountingChroma) -> Any:
    clock = FixedClock(T0 + timedelta(days=30))
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=chroma, clock=clock,
                   background_consolidation=False) as engine:
        yield engine


def _fill(hs: Hindsight) -> None:
    hs.record_many([{"content": text, "session_id": f"s{i // 4}", "occurred_at": T0 + timedelta(hours=i)}
                    for i, text in enumerate(EPISODES)], NS)
    for text in FACTS:
        hs.record(text, NS, layer=Layer.SEMANTIC, kind="fact")
    for text in COLD:
        m = hs.record(text, NS, occurred_at=T0 - timedelta(days=400))
        m.status = Status.COLD
        with hs.store.transaction() as tx:
            tx.update_memory(m)
            tx.enqueue([(m.id, m.namespace, m.layer.value, t, "sync") for t in ("vector", "activation")], 0.0)
        hs.outbox.apply([m.id])


def _vector_channel(hs: Hindsight, query: str, **kwargs: Any) -> list[tuple[str, float]]:
    trace = hs.recall(query, NS, explain=True, track=False, **kwargs).trace
    assert trace is not None
    return [(c.id, c.score) for c in trace.channels["vector"]]


@pytest.mark.parametrize("layers", [None, ["episodic"], ["semantic"]])
@pytest.mark.parametrize("include_cold", [False, True])
def test_the_scan_ranks_what_the_index_ranks(hs: Hindsight, chroma: CountingChroma, layers: list[str] | None,
                                             include_cold: bool) -> None:
    _fill(hs)
    for query in QUERIES:
        hs.config.recall.exact_vector_max_memories = 0
        before = chroma.queries
        indexed = _vector_channel(hs, query, layers=layers, include_cold=include_cold)
        assert chroma.queries > before  # the index answered
        hs.config.recall.exact_vector_max_memories = 10_000
        before = chroma.queries
        scanned = _vector_channel(hs, query, layers=layers, include_cold=include_cold)
        assert chroma.queries == before  # the snapshot answered
        assert [mid for mid, _ in scanned] == [mid for mid, _ in indexed], query
        assert np.allclose([s for _, s in scanned], [s for _, s in indexed], atol=1e-4)
        got = {hs.get(mid).layer.value for mid, _ in scanned}  # type: ignore[union-attr]
        assert layers is None or got <= set(layers)
        cold = {mid for mid, _ in scanned if hs.get(mid).status == Status.COLD}  # type: ignore[union-attr]
        assert bool(cold) == (include_cold and layers != ["semantic"])


def test_the_knob_switches_to_the_index_above_the_size(hs: Hindsight, chroma: CountingChroma) -> None:
    hs.record_many([{"content": text, "session_id": "s1"} for text in EPISODES], NS)
    size = len(EPISODES)
    for limit, reads_index in [(size, False), (size + 1, False), (size - 1, True), (0, True)]:
        hs.config.recall.exact_vector_max_memories = limit
        before = chroma.queries
        result = hs.recall("What am I allergic to?", NS)
        assert (chroma.queries > before) == reads_index, limit
        assert "peanuts" in result.memories[0].content


def test_an_outage_degrades_only_a_namespace_above_the_size(hs: Hindsight, chroma: CountingChroma) -> None:
    hs.record_many([{"content": text, "session_id": "s1"} for text in EPISODES], NS)
    hs.record_many([{"content": text, "session_id": "s1"} for text in EPISODES[:4]], "user:small")
    hs.config.recall.exact_vector_max_memories = 4
    healthy = _vector_channel(hs, "Where does my sister live?")
    chroma.down = True
    result = hs.recall("Where does my sister live?", NS, explain=True, track=False)
    assert result.degraded == ["vector"] and "Lisbon" in result.memories[0].content
    assert result.trace is not None
    assert [c.id for c in result.trace.channels["vector"]] == [mid for mid, _ in healthy]
    small = hs.recall("Where does my sister live?", "user:small")
    assert small.degraded == [] and "Lisbon" in small.memories[0].content


def test_best_first_is_a_stable_sort_of_the_allowed_rows() -> None:
    rng = np.random.default_rng(5)
    scores = np.round(rng.standard_normal(5000), 2).astype(np.float32)  # many ties
    for n, allowed in [(25, lambda i: True), (25, lambda i: i % 97 == 0), (10, lambda i: i < 3), (5, lambda i: False)]:
        expected = [int(i) for i in np.argsort(-scores, kind="stable") if allowed(int(i))][:n]
        assert best_first(scores, n, allowed) == expected
    assert best_first(scores[:3], 10, lambda i: True) == [int(i) for i in np.argsort(-scores[:3], kind="stable")]


def test_a_layer_kept_in_a_shared_collection_is_scanned_beside_the_namespaces_own_index(
        tmp_path: Path, embedder: Any) -> None:
    """A namespace large enough for the index whose few facts sit in a pool shared with other namespaces:
    the pool's namespace filter cost 35-50 ms a query with 100k memories stored, so the facts are scored
    from the snapshot, and rank as the pool ranks them; the episodes' own collection is still queried."""
    chroma = CountingChroma(tmp_path / "chroma", own_collection_at=len(EPISODES))
    clock = FixedClock(T0 + timedelta(days=30))
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=chroma, clock=clock,
                   background_consolidation=False) as hs:
        _fill(hs)
        assert chroma.shared(NS, "semantic") and not chroma.shared(NS, "episodic")
        for query in QUERIES:
            hs.config.recall.exact_vector_max_memories = 0  # the index for every layer
            indexed = _vector_channel(hs, query, layers=["semantic"])
            mixed = _vector_channel(hs, query)
            hs.config.recall.exact_vector_max_memories = len(FACTS)  # the facts, not the namespace
            chroma.layers_queried.clear()
            scanned = _vector_channel(hs, query, layers=["semantic"])
            assert chroma.layers_queried == [], query
            assert [mid for mid, _ in scanned] == [mid for mid, _ in indexed], query
            assert np.allclose([s for _, s in scanned], [s for _, s in indexed], atol=1e-4)
            both = _vector_channel(hs, query)
            assert chroma.layers_queried == ["episodic"], query
            assert [mid for mid, _ in both] == [mid for mid, _ in mixed], query
        result = hs.recall("What am I allergic to?", NS, layers=["semantic"])
        assert result.memories and "peanuts" in result.memories[0].content
