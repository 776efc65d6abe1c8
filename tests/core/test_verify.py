"""``reconcile(verify=True)`` detects a vector index that answers wrongly, not only a missing id, and
rebuilds it from the stored embeddings."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.store import open_store
from hindsight_core.vectors.base import VectorHit
from hindsight_core.vectors.chroma import ChromaVectorIndex
from hindsight_core.write import verify
from hindsight_core.write.outbox import VECTOR
from hindsight_core.write.verify import PROBE_RANDOM, PROBE_RECENT, RECHECK_DEPTH, ReconcileReport

HERE = Path(__file__).parent


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lookups(hs: Hindsight, namespace: str, depth: int = 10, *, pending: bool = False) -> tuple[int, int, int]:
    """(memories, lookups that raised, lookups that missed): every memory queried with its own vector.
    With ``pending``, memories whose vector is not written yet (not embedded, or its vector write still in
    the outbox: work of a writer that died or whose apply failed) are left out: the index cannot hold them."""
    ids = [r[0] for r in hs.store.query("SELECT id FROM memories WHERE namespace = ? AND layer = 'episodic'",
                                        (namespace,))]
    vectors = hs.store.get_embeddings(hs.embedder.name, ids)
    assert pending or len(vectors) == len(ids)
    if pending:
        waiting = {r[0] for r in hs.store.query("SELECT memory_id FROM outbox WHERE namespace = ? AND target = ?",
                                                (namespace, VECTOR))}
        vectors = {mid: v for mid, v in vectors.items() if mid not in waiting}
    raised = missed = 0
    for mid, vector in vectors.items():
        try:
            missed += mid not in {h.memory_id for h in hs.vectors.query(namespace, "episodic", vector, depth)}
        except Exception:
            raised += 1
    return len(ids), raised, missed


def _facts(i: int) -> str:
    return f"Fact {i}: the user's cousin number {i} lives in city {i * 13 % 97} and collects item {i * 7 % 89}"


def test_an_index_that_holds_the_right_ids_but_answers_wrongly_is_rebuilt(tmp_path: Path, embedder) -> None:
    data = tmp_path / "data"
    with Hindsight(data, embedder=embedder, background_consolidation=False) as hs:
        allergy = hs.record("I'm allergic to peanuts", namespace="user:a", session_id="s1")
        hs.record_many([_facts(i) for i in range(30)], namespace="user:a")
        hs.record_many([_facts(i) for i in range(10)], namespace="user:b")
    rewritten = subprocess.run([sys.executable, str(HERE / "rogue_chroma.py"), str(data / "chroma"), "user:a"],
                               check=True, capture_output=True, text=True)
    assert int(rewritten.stdout) == 31

    with Hindsight(data, embedder=embedder, background_consolidation=False) as hs:
        expected = {r[0] for r in hs.store.query("SELECT id FROM memories WHERE namespace = 'user:a'")}
        assert hs.vectors.ids("user:a", "episodic") == expected  # an id comparison sees nothing wrong
        n, raised, missed = _lookups(hs, "user:a")
        assert raised == 0 and missed > n // 2, (n, raised, missed)

        report = hs.reconcile(verify=True)
        assert isinstance(report, ReconcileReport) and not report.failed
        assert set(report.rebuilt) == {"episodic:user:a"}, report.rebuilt
        assert "own vector" in report.rebuilt["episodic:user:a"]
        assert _lookups(hs, "user:a") == (31, 0, 0)
        assert _lookups(hs, "user:b") == (10, 0, 0)
        assert hs.recall("what am I allergic to? peanut allergy", namespace="user:a", k=3).hits[0].memory.id \
            == allergy.id
        assert hs.reconcile(verify=True).rebuilt == {}  # repaired for good


@pytest.mark.integration  # a real model, server or process, reached without a fixture
@pytest.mark.slow
def test_chroma_written_by_several_engine_processes_is_detected_and_rebuilt(tmp_path: Path) -> None:
    """The issue's failure: several processes on one embedded directory. Each writer injects its own
    index (no lock), as every ``Hindsight(path)`` process did before the directory was owned. Whether a
    round of concurrent writers breaks Chroma depends on how their flushes interleave (about one round in
    two here), so up to two rounds run; whatever state they leave, ``reconcile(verify=True)`` must leave
    an index in which every memory is found by its own vector, and report what it repaired when it was
    broken (rebuilt, or re-applied). A writer may itself die of the corruption."""
    data = tmp_path / "data"
    data.mkdir()
    store = open_store(data / "hindsight.sqlite3")
    store.dataset_id()  # created before the writers race: its id names their collections
    store.close()
    embedder: Any = _load("shared_writer").HashEmbedder()
    raised = missed = 0
    for round_ in (1, 2):
        go = tmp_path / f"go{round_}"
        writers = [subprocess.Popen([sys.executable, str(HERE / "shared_writer.py"), str(data), str(go),
                                     f"{round_}.{t}", "300"], stderr=subprocess.PIPE, text=True) for t in range(4)]
        go.touch()
        for writer in writers:
            writer.communicate(timeout=300)
        with Hindsight(data, embedder=embedder, background_consolidation=False, reconcile_on_open=False) as hs:
            _, raised, missed = _lookups(hs, "shared:ns", RECHECK_DEPTH, pending=True)
        if raised:
            break
    with Hindsight(data, embedder=embedder, background_consolidation=False) as hs:
        report = hs.reconcile(verify=True)
        if raised:
            assert "shared:ns: query raised" in report.rebuilt["episodic:*"], report.rebuilt
        n, raised_after, missed_after = _lookups(hs, "shared:ns", RECHECK_DEPTH)
        print(f"\nseveral writers: {n} memories; before reconcile {raised} lookups raised, {missed} missed; "
              f"after {raised_after} raise, {missed_after} miss; rebuilt {report.rebuilt}")
        if missed:  # whatever share was lost, not only one above a tolerance: verify rebuilt it, or the
            # marker went with the entries and the data set's missing entries were re-applied first
            assert report.rebuilt or report.applied >= missed, report
        assert raised_after == 0 and missed_after == 0
        assert hs.reconcile(verify=True).rebuilt == {}  # the index passes its probe
        # a writer may have died before writing any given note: ask for one that was stored
        stored = hs.find("shared:ns", limit=1)[0]
        assert stored.id in {h.memory.id for h in hs.recall(stored.content, namespace="shared:ns", k=3).hits}


def test_a_healthy_index_is_probed_whole_up_to_a_limit_and_left_alone(tmp_path: Path, embedder,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "PROBE_WHOLE_LIMIT", 80)
    with Hindsight(tmp_path, embedder=embedder, background_consolidation=False) as hs:
        hs.record_many([_facts(i) for i in range(100)], namespace="user:a")
        hs.record_many([_facts(i) for i in range(5)], namespace="user:b")
        report = hs.reconcile(verify=True)
        assert report.rebuilt == {} and not report.errors
        assert report.probed == PROBE_RECENT + PROBE_RANDOM + 5  # user:a sampled, user:b whole; other layers empty


class _LosingIndex(ChromaVectorIndex):
    """A real Chroma index whose answers leave out some memories, as an HNSW segment that another process
    flushed over does while its metadata still holds every id."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lost: set[str] = set()

    def query_many(self, *args: Any, **kwargs: Any) -> list[list[VectorHit]]:
        return [[h for h in hits if h.memory_id not in self.lost] for hits in super().query_many(*args, **kwargs)]

    def drop_namespace(self, *args: Any, **kwargs: Any) -> None:
        super().drop_namespace(*args, **kwargs)
        self.lost = set()


def test_one_memory_lost_to_vector_search_is_found_and_rebuilt(tmp_path: Path, embedder) -> None:
    """One lost memory in 300 (0.3 %, under any tolerance a sample could afford) is still a memory that
    vector recall never returns."""
    index = _LosingIndex(tmp_path / "chroma")
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=index, background_consolidation=False) as hs:
        notes = hs.record_many([_facts(i) for i in range(300)], namespace="user:a")
        hs.record_many([_facts(i) for i in range(5)], namespace="user:b")
        index.lost = {notes[123].id}
        assert _lookups(hs, "user:a", RECHECK_DEPTH) == (300, 0, 1)
        report = hs.reconcile(verify=True)
        # Rebuilt in place, or (when the re-upsert into a shared pool itself leaves a record unreachable,
        # chroma-core/chroma#7758 in 1.5.9, a few runs in a hundred) with the whole layer, for user:a only
        assert set(report.rebuilt) in ({"episodic:user:a"}, {"episodic:*"}), report.rebuilt
        (why,) = report.rebuilt.values()
        assert "1 of 300 probed memories" in why and "user:b" not in why
        assert _lookups(hs, "user:a", RECHECK_DEPTH) == (300, 0, 0)
        assert hs.reconcile(verify=True).rebuilt == {}


class _UnreadablePool(ChromaVectorIndex):
    """A real Chroma index whose pools answer ``get`` of vectors with the error a segment that several
    writers flushed over raises (ids and metadata still read)."""

    unreadable = False

    def _move_pooled(self, namespace: str, layer: str, own: Any) -> None:
        if self.unreadable:
            raise RuntimeError("Error executing plan: Internal error: Error finding id")
        super()._move_pooled(namespace, layer, own)


def test_a_pool_whose_vectors_cannot_be_read_does_not_stop_reconcile(tmp_path: Path, embedder) -> None:
    """A namespace that moved to its own collection while another process still wrote to its pool: the
    pool's entries cannot be moved, so reconcile writes them again from the store."""
    index = _UnreadablePool(tmp_path / "chroma", own_collection_at=20)
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=index, background_consolidation=False) as hs:
        notes = hs.record_many([_facts(i) for i in range(30)], namespace="user:a")
        hs.record_many([_facts(i) for i in range(5)], namespace="user:b")  # the pool exists
        hs.reconcile(verify=False)  # every vector written (user:a moved at 20) before the pool turns bad
        index.unreadable = True
        index.delete("user:a", "episodic", [notes[0].id])  # lost from its own collection
        report = hs.reconcile(verify=True)
        # Repaired in place, or (when the re-upserted record is left unreachable, chroma-core/chroma#7758)
        # by rebuilding user:a, which the unreadable pool must not stop either (the test below forces it)
        assert not report.failed and set(report.rebuilt) <= {"episodic:user:a"}, report
        assert _lookups(hs, "user:a") == (30, 0, 0)


class _UnreadablePoolLosing(_UnreadablePool, _LosingIndex):
    """An unreadable pool, and a namespace collection whose search leaves out a memory until it is
    dropped (the re-upserted record chroma-core/chroma#7758 leaves unreachable)."""


def test_a_namespace_rebuilt_while_its_pool_cannot_be_read_is_rebuilt_in_its_own_collection(
    tmp_path: Path, embedder
) -> None:
    """The rebuild writes the namespace back through the pool; reaching ``own_collection_at`` there moves
    it to its own collection, which must hold the rebuilt entries even when the pool's cannot be read."""
    index = _UnreadablePoolLosing(tmp_path / "chroma", own_collection_at=20)
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=index, background_consolidation=False) as hs:
        notes = hs.record_many([_facts(i) for i in range(30)], namespace="user:a")
        hs.record_many([_facts(i) for i in range(5)], namespace="user:b")
        hs.reconcile(verify=False)
        index.unreadable = True
        index.lost = {notes[7].id}
        report = hs.reconcile(verify=True)
        assert not report.failed and set(report.rebuilt) == {"episodic:user:a"}, report
        assert _lookups(hs, "user:a") == (30, 0, 0)
        assert _lookups(hs, "user:b") == (5, 0, 0)


class _CorruptCollection(ChromaVectorIndex):
    """A real Chroma index whose layer answers with an error until the whole collection is rebuilt: a
    segment corrupt beyond what deleting one namespace fixes."""

    corrupt = True

    def query_many(self, namespace: str, layer: str, vectors: np.ndarray, n: int, **kwargs: Any) -> Any:
        if self.corrupt:
            raise RuntimeError("Error finding id")
        return super().query_many(namespace, layer, vectors, n, **kwargs)

    def reset_layer(self, layer: str) -> None:
        super().reset_layer(layer)
        self.corrupt = False


def test_a_collection_corrupt_as_a_whole_is_rebuilt_for_every_namespace(tmp_path: Path, embedder) -> None:
    index = _CorruptCollection(tmp_path / "chroma")
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=index, background_consolidation=False) as hs:
        index.corrupt = False
        hs.record_many([_facts(i) for i in range(8)], namespace="user:a")
        hs.record_many([_facts(i) for i in range(4)], namespace="user:b")
        index.corrupt = True
        report = hs.reconcile(verify=True)
        assert {"episodic:*"} <= set(report.rebuilt), report.rebuilt
        assert not report.errors
        assert _lookups(hs, "user:a") == (8, 0, 0) and _lookups(hs, "user:b") == (4, 0, 0)
