"""Recall that stays cheap as memory grows (issue 11): snapshots follow the change log instead of being
rebuilt, small namespaces share the vector index's pool collections and a large one has its own, and
the keyword index scores like BM25Okapi.

Speed is the benchmark's business (benchmarks/scale.py); these tests check that what the fast paths
produce is what a full rebuild would, that another writer's memories are seen, and that the benchmark
itself runs."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from hindsight_core import Hindsight
from hindsight_core.recall.corpus import CorpusCache, VectorsFor
from hindsight_core.recall.keyword import KeywordIndex, tokenize
from hindsight_core.vectors.chroma import ChromaVectorIndex, collection_name, pool_name

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


def test_each_new_view_floors_negative_idfs_at_bm25okapis_average() -> None:
    """A write makes a new view, whose average idf over the vocabulary (BM25Okapi's floor for a term in
    more than half the documents) is read from the index's counts of terms per document frequency; a
    view loaded from a snapshot file reads the same counts from its columns."""
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(60)]
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    docs = [" ".join(rng.choice(words, size=int(rng.integers(0, 8)), p=p)) for _ in range(120)]
    tokens = [tokenize(d) or ["\x00"] for d in docs]
    index = KeywordIndex(docs[:10])
    floored = 0
    for n in range(11, len(docs) + 1):
        index.extend([docs[n - 1]])
        view, reference = index.view(n), BM25Okapi(tokens[:n])
        loaded = KeywordIndex.from_columns(*view.columns()).view(n)
        for term in ("w0", "w1", "w2"):  # frequent enough to be floored
            expected = reference.idf.get(term, 0.0)
            assert np.isclose(view.idf(term), expected, atol=1e-12), (n, term)
            assert np.isclose(loaded.idf(term), expected, atol=1e-12), (n, term)
            floored += view._df(term) > n / 2
    assert floored > 20  # the floor was what was checked


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
    assert np.array_equal(live.occurred, rebuilt.occurred)
    assert live.moments is not None and live.moments.rows == live.size
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


def test_a_memory_whose_time_moved_is_retimed_in_the_snapshot_not_rebuilt(tmp_path: Path, embedder) -> None:
    """Consolidation moves a distilled fact to the time of the latest episode that corroborates it; the
    snapshot takes the new time (a rebuild took seconds at 100k memories, on every corroboration), the
    one a recall was using keeps the old, and a question about that day finds the fact there."""
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    with Hindsight(tmp_path / "data", embedder=embedder) as hs:
        hs.record_many([{"content": t, "session_id": "s1", "occurred_at": t0 + timedelta(hours=i)}
                        for i, t in enumerate(TURNS)], namespace=NS)
        hs.recall("dog", NS)
        first = hs._recall._pipeline().corpus(NS, False)
        fact = next(m for m in first.memories if "vacuum" in m.content)
        moved = t0 + timedelta(days=20)
        with hs.store.transaction() as tx:
            tx.update_memory(fact.model_copy(update={"occurred_at": moved}))
        asked = "What did I tell you on March 22?"
        result = hs.recall(asked, NS, now=moved + timedelta(days=1), track=False)
        now = hs._recall._pipeline().corpus(NS, False)
        assert now.growth is first.growth, "the snapshot was extended, not rebuilt"
        i = now.position[fact.id]
        assert now.occurred[i] == moved.timestamp() and first.occurred[i] == (t0 + timedelta(hours=1)).timestamp()
        assert now.by_recency[0] == i and first.by_recency[0] != i
        _snapshot_matches_rebuild(hs)
        assert [h.memory.id for h in result.hits] == [fact.id]


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


def _chroma(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def _names(client: Any) -> set[str]:
    return {c.name for c in client.list_collections()}


def test_small_namespaces_share_pools_and_a_legacy_layout_moves_over(tmp_path: Path) -> None:
    client = _chroma(tmp_path / "c")
    legacy = client.get_or_create_collection("hindsight_episodic", embedding_function=None,
                                             metadata={"hnsw:space": "cosine"})
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((6, 8)).astype(np.float32)
    legacy.add(ids=[f"m{i}" for i in range(6)], embeddings=vectors,
               metadatas=[{"namespace": "a" if i < 4 else "b", "kind": "turn"} for i in range(6)])
    index = ChromaVectorIndex(client=client, pools=1)  # one pool: "a" and "b" share it
    assert index.ids("a", "episodic") == {"m0", "m1", "m2", "m3"}
    assert index.ids("b", "episodic") == {"m4", "m5"}
    assert _names(client) == {pool_name("hindsight", "a", "episodic", 1)}
    assert {h.memory_id for h in index.query("b", "episodic", vectors[0], 10)} == {"m4", "m5"}
    assert [h.memory_id for h in index.query("a", "episodic", vectors[5], 10, kinds=["fact"])] == []
    assert index.query("nobody", "episodic", vectors[0], 10) == []
    assert index.query("a", "semantic", vectors[0], 10) == [] and len(_names(client)) == 1  # nothing created
    index.delete("b", "episodic", ["m4"])
    index.delete("a", "episodic", ["m5"])  # an id of another namespace: nothing of this one goes
    assert index.ids("b", "episodic") == {"m5"} and index.ids("a", "episodic") == {"m0", "m1", "m2", "m3"}
    assert index.count("a", "episodic") == 4 and index.count_layer("episodic") == 5
    index.drop_namespace("a", ["episodic", "semantic"])  # a layer never written is no error
    assert index.ids("a", "episodic") == set() and index.count_layer("episodic") == 1
    assert index.ids("b", "episodic") == {"m5"}


def test_many_small_namespaces_cost_a_fixed_number_of_collections(tmp_path: Path) -> None:
    client = _chroma(tmp_path / "c")
    index = ChromaVectorIndex(client=client, pools=4)
    rng = np.random.default_rng(2)
    centres = {f"user:{i}": rng.standard_normal(16).astype(np.float32) for i in range(40)}
    for ns, centre in centres.items():
        noise = 0.1 * rng.standard_normal((5, 16)).astype(np.float32)
        index.upsert(ns, "episodic", [f"{ns}/{j}" for j in range(5)], centre + noise, ["turn"] * 5)
    assert len(_names(client)) <= 4
    for ns, centre in centres.items():  # every query answers from its namespace only, all of it
        hits = index.query(ns, "episodic", centre, 50)
        assert {h.memory_id for h in hits} == {f"{ns}/{j}" for j in range(5)}
        assert index.count(ns, "episodic") == 5
    assert index.count_layer("episodic") == 200


def test_a_namespace_moves_to_its_own_collection_when_it_grows(tmp_path: Path, monkeypatch) -> None:
    client = _chroma(tmp_path / "c")
    index = ChromaVectorIndex(client=client, pools=1, own_collection_at=10)
    other = ChromaVectorIndex(client=client, pools=1, own_collection_at=10)  # another process's view
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((12, 8)).astype(np.float32)
    index.upsert("small", "episodic", ["s0"], vectors[:1], ["turn"])
    index.upsert("big", "episodic", [f"b{i}" for i in range(9)], vectors[:9], ["turn"] * 9)
    assert other.count("big", "episodic") == 9  # "other" has seen "big" pooled
    own = collection_name("hindsight", "big", "episodic")
    assert own not in _names(client)
    index.upsert("big", "episodic", ["b9", "b10"], vectors[9:11], ["fact", "turn"])
    assert own in _names(client)
    assert client.get_collection(own).count() == 11
    pool = client.get_collection(pool_name("hindsight", "big", "episodic", 1))
    assert pool.get(include=[])["ids"] == ["s0"]  # the pool keeps the other namespace only
    assert index.query("big", "episodic", vectors[10], 1)[0].memory_id == "b10"
    assert [h.memory_id for h in index.query("big", "episodic", vectors[10], 5, kinds=["fact"])] == ["b9"]
    assert index.ids("small", "episodic") == {"s0"}

    other.upsert("big", "episodic", ["b11"], vectors[11:], ["turn"])  # before it looks again: to the pool
    assert sorted(pool.get(include=[])["ids"]) == ["b11", "s0"]
    monkeypatch.setattr("hindsight_core.vectors.chroma._RECHECK_S", 0.0)
    assert other.query("big", "episodic", vectors[11], 1)[0].memory_id == "b11"  # it moved it over
    assert pool.get(include=[])["ids"] == ["s0"]
    assert index.ids("big", "episodic") == {f"b{i}" for i in range(12)}
    other.delete("big", "episodic", ["b0"])
    other.drop_namespace("small", ["episodic"])
    assert index.count_layer("episodic") == 11 and index.count("big", "episodic") == 11


def test_a_write_to_the_pool_while_another_thread_moves_the_namespace_is_moved_too(tmp_path: Path) -> None:
    """A writer that found the namespace pooled can upsert to the pool after another thread moved it;
    what it wrote must reach the namespace's own collection, where queries look."""
    client = _chroma(tmp_path / "c")
    index = ChromaVectorIndex(client=client, pools=1, own_collection_at=10)
    vectors = np.random.default_rng(4).standard_normal((12, 8)).astype(np.float32)
    index.upsert("grows", "episodic", [f"g{i}" for i in range(9)], vectors[:9], ["turn"] * 9)
    pool = client.get_collection(pool_name("hindsight", "grows", "episodic", 1))
    moved = threading.Event()

    class HeldPool:  # the pool, with the late writer's upsert held until the namespace has moved
        def __getattr__(self, name: str) -> Any:
            return getattr(pool, name)

        def upsert(self, ids: list[str], **kwargs: Any) -> None:
            if ids == ["late"]:
                moved.wait(10)
            pool.upsert(ids=ids, **kwargs)

    index._pool_handles[pool.name] = HeldPool()
    late = threading.Thread(target=index.upsert, args=("grows", "episodic", ["late"], vectors[11:], ["turn"]))
    late.start()
    index.upsert("grows", "episodic", ["g9", "g10"], vectors[9:11], ["turn"] * 2)
    assert collection_name("hindsight", "grows", "episodic") in _names(client)
    moved.set()
    late.join()
    assert pool.count() == 0
    assert index.query("grows", "episodic", vectors[11], 1)[0].memory_id == "late"
    assert index.count("grows", "episodic") == 12


def test_a_directory_with_a_collection_per_namespace_keeps_working(tmp_path: Path) -> None:
    client = _chroma(tmp_path / "c")
    name = collection_name("hindsight", "a", "episodic")
    earlier = client.get_or_create_collection(name, embedding_function=None, metadata={
        "hnsw:space": "cosine", "hindsight:namespace": "a", "hindsight:layer": "episodic"})
    vectors = np.eye(3, dtype=np.float32)
    earlier.add(ids=["m0", "m1"], embeddings=vectors[:2], metadatas=[{"namespace": "a", "kind": "turn"}] * 2)
    index = ChromaVectorIndex(client=client)
    index.upsert("a", "episodic", ["m2"], vectors[2:], ["turn"])
    assert earlier.count() == 3 and _names(client) == {name}
    assert index.query("a", "episodic", vectors[2], 1)[0].memory_id == "m2"
    assert index.count_layer("episodic") == 3


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
