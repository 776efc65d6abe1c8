"""Recall that stays cheap as memory grows (issue 11): snapshots follow the change log instead of being
rebuilt, the vector index has a collection per namespace, and the keyword index scores like BM25Okapi.

Speed is the benchmark's business (benchmarks/scale.py); these tests check that what the fast paths
produce is what a full rebuild would, that another writer's memories are seen, and that the benchmark
itself runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from hindsight_core import Hindsight
from hindsight_core.recall.corpus import CorpusCache, VectorsFor
from hindsight_core.recall.keyword import KeywordIndex, tokenize
from hindsight_core.vectors.chroma import ChromaVectorIndex, collection_name

ROOT = Path(__file__).resolve().parents[2]
NS = "user:scale"
TURNS = [
    "I adopted a beagle called Biscuit last spring.", "Biscuit hates the vacuum cleaner.",
    "我对花生过敏，很严重。", "The quarterly review moved to Thursday.", "Lily starts violin lessons on Monday.",
    "Remind me to buy dog food for Biscuit.", "周末想去杭州爬山。", "My budget for the Lisbon trip is 3000 euros.",
]


def test_keyword_index_scores_like_bm25okapi_while_growing() -> None:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(200)] + ["花生", "过敏", "beagle"]
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    docs = [" ".join(rng.choice(words, size=int(rng.integers(0, 10)), p=p)) for _ in range(400)]
    index = KeywordIndex(docs[:150])
    index.extend(docs[150:])
    reference = BM25Okapi([tokenize(d) or ["\x00"] for d in docs])
    earlier = BM25Okapi([tokenize(d) or ["\x00"] for d in docs[:150]])
    for _ in range(30):
        query = tokenize(" ".join(rng.choice(words, size=4, p=p)))
        assert np.allclose(index.scores(query), reference.get_scores(query), atol=1e-9)
        # a snapshot taken before the append still scores its own documents only
        assert np.allclose(index.view(150).scores(query), earlier.get_scores(query), atol=1e-9)
    best = index.top(tokenize("花生过敏"), 5)
    assert best and all("花生" in docs[i] or "过敏" in docs[i] for i, _ in best)


def _snapshot_matches_rebuild(hs: Hindsight) -> None:
    pipeline = hs._recall._pipeline()
    live = pipeline.corpus(NS, False)
    rebuilt = CorpusCache(hs.store, pipeline._standing_of)._build(
        NS, False, live.change, VectorsFor(hs.outbox.vectors_for, hs.embedder.dim)
    )
    assert [m.id for m in live.memories] == [m.id for m in rebuilt.memories]
    assert np.array_equal(live.vectors, rebuilt.vectors)
    assert list(live.neighbours) == list(rebuilt.neighbours)
    assert np.array_equal(live.previous, rebuilt.previous) and np.array_equal(live.following, rebuilt.following)
    assert live.entities == rebuilt.entities and live.standing_index == rebuilt.standing_index
    # the recency order and the vectors' moments, kept up by appending, are those of the whole snapshot
    assert np.array_equal(live.by_recency, np.argsort(-live.occurred, kind="stable"))
    assert np.array_equal(live.recency_keys, -live.occurred[live.by_recency])
    assert live.moments is not None and live.moments.count == live.size
    query = live.vectors[0]
    spread = live.moments.spread(query)
    assert np.isclose(spread.mean, float((live.vectors @ query).astype(np.float64).mean()), atol=1e-7)
    assert np.isclose(spread.std, float((live.vectors @ query).astype(np.float64).std()), atol=1e-7)
    terms = tokenize("Biscuit beagle 花生 budget")
    assert np.allclose(live.keyword.scores(terms), rebuilt.keyword.scores(terms))


def test_writes_extend_the_snapshot_and_recall_sees_them(tmp_path: Path, embedder) -> None:
    with Hindsight(tmp_path / "data", embedder=embedder) as hs:
        hs.record_many([{"content": t, "session_id": "s1"} for t in TURNS[:4]], namespace=NS)
        hs.recall("dog", NS)
        first = hs._recall._pipeline().corpus(NS, False)
        for text in TURNS[4:]:
            hs.record(text, NS, session_id="s2")
            hs.recall(text, NS)  # tracked: reinforcement is not a change
        hs.flush_recall_log()
        now = hs._recall._pipeline().corpus(NS, False)
        assert now.growth is first.growth, "the snapshot was extended, not rebuilt"
        assert now.size == len(TURNS) and first.size == 4  # the earlier snapshot is unchanged
        _snapshot_matches_rebuild(hs)
        hits = hs.recall("What should I buy for my dog?", NS, k=3).hits
        assert any("dog food" in h.memory.content for h in hits)
        # a memory forgotten leaves the snapshot (a rebuild) and recall
        gone = next(m for m in now.memories if "dog food" in m.content)
        assert hs.forget(gone.id, namespace=NS)
        assert all(h.memory.id != gone.id for h in hs.recall("What should I buy for my dog?", NS, k=5).hits)
        _snapshot_matches_rebuild(hs)


def test_another_writer_is_seen_through_the_change_log(tmp_path: Path, embedder) -> None:
    index = ChromaVectorIndex(tmp_path / "chroma")
    reader = Hindsight(tmp_path / "data", embedder=embedder, vector_index=index)
    writer = Hindsight(tmp_path / "data", embedder=embedder, vector_index=ChromaVectorIndex(tmp_path / "chroma"))
    try:
        reader.record_many(TURNS[:3], namespace=NS)
        reader.recall("beagle", NS)
        before = reader._recall._pipeline().corpus(NS, False)
        writer.record("Biscuit's vet appointment is on Friday at 10.", NS)
        hits = reader.recall("When is the vet appointment?", NS, k=3).hits
        assert any("vet appointment" in h.memory.content for h in hits)
        after = reader._recall._pipeline().corpus(NS, False)
        assert after.growth is before.growth and after.size == before.size + 1
        _snapshot_matches_rebuild(reader)
    finally:
        writer.close()
        reader.close()


def test_each_namespace_has_its_own_collection_and_a_legacy_layout_moves_over(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path / "c"), settings=Settings(anonymized_telemetry=False))
    legacy = client.get_or_create_collection("hindsight_episodic", embedding_function=None,
                                             metadata={"hnsw:space": "cosine"})
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((6, 8)).astype(np.float32)
    legacy.add(ids=[f"m{i}" for i in range(6)], embeddings=vectors,
               metadatas=[{"namespace": "a" if i < 4 else "b", "kind": "turn"} for i in range(6)])
    index = ChromaVectorIndex(client=client)
    assert index.ids("a", "episodic") == {"m0", "m1", "m2", "m3"}
    assert index.ids("b", "episodic") == {"m4", "m5"}
    assert "hindsight_episodic" not in {c.name for c in client.list_collections()}
    assert {h.memory_id for h in index.query("b", "episodic", vectors[0], 10)} == {"m4", "m5"}
    assert index.query("nobody", "episodic", vectors[0], 10) == []
    assert collection_name("hindsight", "nobody", "episodic") not in {c.name for c in client.list_collections()}
    index.delete("b", "episodic", ["m4"])
    index.delete("a", "episodic", ["m4"])  # an id of another namespace: nothing of this one goes
    assert index.ids("b", "episodic") == {"m5"} and index.ids("a", "episodic") == {"m0", "m1", "m2", "m3"}
    assert index.count("a", "episodic") == 4 and index.count_layer("episodic") == 5
    index.drop_namespace("a", ["episodic", "semantic"])  # a layer never written is no error
    assert index.ids("a", "episodic") == set() and index.count_layer("episodic") == 1
    assert index.ids("b", "episodic") == {"m5"}


@pytest.mark.integration  # a real model, server or process, reached without a fixture
def test_scale_benchmark_small_variant_runs_and_prints_its_tables() -> None:
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--small"], capture_output=True,
                         text=True, cwd=ROOT, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert "| memories | recall cached p50 / p95 |" in out and "| 300 |" in out
    assert "| namespaces x memories |" in out and "| 20 x 30 |" in out
    assert "record_many / embedder" in out


def test_recency_order_merged_on_append_is_a_stable_sort_of_the_times() -> None:
    """The temporal channel reads "newest first" from an order kept up on append; with many memories
    sharing a time (a batch, a day's granularity), ties stay in snapshot order."""
    from hindsight_core.recall.corpus import Corpus, _merged_recency

    occurred = np.random.default_rng(1).integers(0, 20, 500).astype(np.float64)
    corpus = Corpus(key=(), memories=[], vectors=np.zeros((0, 4), dtype=np.float32), keyword=KeywordIndex().view(0))
    size = 0
    for step in (1, 7, 50, 1, 1, 200, 240):
        corpus.by_recency, corpus.recency_keys = _merged_recency(corpus, occurred[: size + step], size)
        size += step
        assert np.array_equal(corpus.by_recency, np.argsort(-occurred[:size], kind="stable"))
