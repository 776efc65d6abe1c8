"""Recall snapshots kept on disk (issue 11, cold start): the next process loads the file instead of
rebuilding, a stale or damaged file is never trusted, results are the same with and without it, writes
made after the file was saved are seen, and erasure leaves no file behind."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.recall.corpus import Corpus, CorpusCache, VectorsFor
from hindsight_core.recall.keyword import tokenize
from hindsight_core.recall.snapshot_file import SnapshotFiles
from hindsight_core.vectors.chroma import ChromaVectorIndex

NS = "user:files"
OTHER = "user:others"
TOPICS = [
    "beagle Biscuit walks",
    "violin lessons for Lily",
    "Lisbon trip budget",
    "dentist appointment",
    "quarterly review Thursday",
    "peanut allergy",
    "sourdough starter",
    "marathon training plan",
]
QUERIES = [
    "How is Biscuit doing?",
    "When are Lily's lessons?",
    "What is the budget for Lisbon?",
    "Did I book the dentist?",
    "What about the sourdough?",
    "How is the marathon training going?",
]


NOW = datetime(2030, 1, 1, tzinfo=UTC)  # one moment for every recall compared: recency is then the same


def _config(file_min: int = 1) -> HindsightConfig:
    config = HindsightConfig()
    config.recall.snapshot_file_min_memories = file_min
    return config


def _turns(n: int, offset: int = 0) -> list[dict[str, object]]:
    return [
        {"content": f"Note {i}: {TOPICS[i % len(TOPICS)]}, detail {i * 7 % 13}.", "session_id": f"s{i // 5}"}
        for i in range(offset, offset + n)
    ]


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The namespaces whose snapshot was built from the store (rather than loaded or extended)."""
    built: list[str] = []
    original = CorpusCache._build

    def counting(self: CorpusCache, namespace: str, *args: object, **kwargs: object) -> object:
        built.append(namespace)
        return original(self, namespace, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(CorpusCache, "_build", counting)
    yield built


def _answers(hs: Hindsight, namespace: str = NS) -> list[list[tuple[str, float]]]:
    return [
        [(h.memory.id, round(h.score, 9)) for h in hs.recall(q, namespace, k=5, track=False, now=NOW).hits]
        for q in QUERIES
    ]


def _files(path: Path) -> list[Path]:
    folder = path / "recall-snapshots"
    return sorted(folder.iterdir()) if folder.exists() else []


@pytest.fixture
def saved(tmp_path: Path, embedder) -> tuple[Path, list[list[tuple[str, float]]]]:
    """A data directory whose namespace was recalled once (the snapshot built and saved) and closed;
    with the answers that process gave."""
    path = tmp_path / "data"
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        hs.record_many(_turns(40), namespace=NS)
        answers = _answers(hs)
    assert len(_files(path)) == 1
    return path, answers


def test_the_next_process_loads_the_file_and_answers_the_same(saved, embedder, builds, tmp_path: Path) -> None:
    path, answers = saved
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        assert _answers(hs) == answers
    assert builds == [], "the snapshot came from its file"
    # the same store with no file at all gives the same answers (built from the store)
    bare = tmp_path / "bare"
    shutil.copytree(path, bare, ignore=shutil.ignore_patterns("recall-snapshots", ".lock"))
    with Hindsight(bare, embedder=embedder, config=_config(file_min=10**9)) as hs:
        assert _answers(hs) == answers
    assert builds == [NS]


def test_writes_after_the_file_are_seen_without_a_rebuild(saved, embedder, builds, tmp_path: Path) -> None:
    path, _ = saved
    old = tmp_path / "old.snap"
    (file,) = _files(path)
    shutil.copy(file, old)
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        hs.record("Biscuit learned to open the fridge with his nose.", NS, session_id="late")
    shutil.copy(old, file)  # the file is now older than the store: the change log brings it up to date
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        hits = hs.recall("What did Biscuit learn with the fridge?", NS, k=3, track=False).hits
        assert "fridge" in hits[0].memory.content
        assert hs._recall._pipeline().corpus(NS, False).size == 41
        hs.record("The fridge now has a child lock.", NS, session_id="late")
        assert "child lock" in hs.recall("Is there a lock on the fridge?", NS, k=1, track=False).hits[0].memory.content
    assert builds == []
    with Hindsight(path, embedder=embedder, config=_config()) as hs:  # closing saved the newer snapshot
        assert hs._recall._pipeline().corpus(NS, False).size == 42
    assert builds == []


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "empty", "another embedder"])
def test_a_damaged_or_foreign_file_is_rebuilt(saved, embedder, builds, damage: str) -> None:
    path, answers = saved
    (file,) = _files(path)
    data = bytearray(file.read_bytes())
    if damage == "flipped byte":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncated":
        data = data[: len(data) - 100]
    elif damage == "empty":
        data = bytearray()
    else:  # a file written for another model's vectors: same layout, another identity
        data = data.replace(embedder.name.encode(), b"x" * len(embedder.name), 1)
    file.write_bytes(bytes(data))
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        assert _answers(hs) == answers
    assert builds == [NS]
    assert file.read_bytes() != bytes(data), "the rebuilt snapshot replaced the file"


def test_a_deletion_after_the_file_makes_a_rebuild(saved, embedder, builds) -> None:
    path, _ = saved
    with Hindsight(path, embedder=embedder, config=_config(file_min=10**9)) as hs:  # this one saves nothing
        gone = hs.recall("When are Lily's lessons?", NS, k=1, track=False).hits[0].memory
        builds.clear()
        with hs.store.transaction() as tx:  # behind the engine's back, as another tool would
            tx.delete_memories([gone.id])
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        ids = {h.memory.id for q in QUERIES for h in hs.recall(q, NS, k=10, track=False).hits}
        assert gone.id not in ids
    assert builds == [NS]


def test_forgetting_removes_the_files(saved, embedder) -> None:
    path, _ = saved
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        hs.record_many(_turns(10), namespace=OTHER)
        hs.recall("Biscuit", OTHER, track=False)
        assert len(_files(path)) == 2
        victim = hs.recall("How is Biscuit doing?", NS, k=1, track=False).hits[0].memory.id
        assert hs.forget(victim)
        assert len(_files(path)) == 1, "the namespace's file held the erased id and vector"
        assert all(victim.encode() not in f.read_bytes() for f in _files(path))
        assert victim not in {h.memory.id for h in hs.recall("How is Biscuit doing?", NS, k=10, track=False).hits}
        hs.forget_namespace(OTHER)
        assert len(_files(path)) == 1
    # closing saved NS again (without the victim); the erased namespace stays without a file
    (file,) = _files(path)
    assert victim.encode() not in file.read_bytes()
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        hs.forget_namespace(NS)
        assert _files(path) == []


def test_an_engine_sharing_its_store_keeps_no_files(tmp_path: Path, embedder) -> None:
    index = ChromaVectorIndex(tmp_path / "chroma")
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=index, config=_config()) as hs:
        hs.record_many(_turns(10), namespace=NS)
        assert hs.recall("Biscuit", NS, track=False).hits
    assert _files(tmp_path / "data") == []


def test_a_loaded_snapshot_holds_what_a_built_one_does(tmp_path: Path, embedder, builds) -> None:
    """Field by field over ``Corpus``: a field added to the snapshot without being saved fails here."""
    path = tmp_path / "data"
    extra = [
        {"content": "我对花生过敏，很严重。", "session_id": "zh"},
        {"content": "My name is Ana and I am vegetarian.", "session_id": "facts"},
        {"content": "周末想去杭州爬山，和王磊一起。", "session_id": "zh"},
    ]
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        hs.record_many([*_turns(30), *extra], namespace=NS)
        hs.recall("peanut allergy", NS, track=False)
    builds.clear()
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        loaded = hs._recall._pipeline().corpus(NS, False)
        assert builds == [], "loaded from the file"
        built = CorpusCache(hs.store, hs._recall._pipeline()._standing_of)._build(
            NS, False, loaded.change, VectorsFor(hs.outbox.vectors_for, hs.embedder.dim)
        )
        assert loaded.size == built.size == 33
        for f in dataclasses.fields(Corpus):
            mine, theirs = getattr(loaded, f.name), getattr(built, f.name)
            if f.name in ("growth", "generation"):
                continue
            if f.name == "memories":
                assert [m.id for m in mine] == [m.id for m in theirs]
                assert [m.content for m in mine] == [m.content for m in theirs]
                positions = range(loaded.size)
                assert [(mine.id_at(i), mine.layer_at(i), mine.session_at(i)) for i in positions] == [
                    (m.id, m.layer, m.session_id) for m in theirs
                ]
            elif f.name == "keyword":
                for query in ("Biscuit beagle walks", "花生 过敏", "vegetarian Ana", "budget"):
                    terms = tokenize(query)
                    assert np.allclose(mine.scores(terms), theirs.scores(terms)), query
                    assert [mine.smooth_idf(t) for t in terms] == [theirs.smooth_idf(t) for t in terms]
                assert list(mine.terms[: loaded.size]) == list(theirs.terms[: built.size])
            elif f.name == "moments":
                assert mine.count == theirs.count
                assert np.allclose(mine.mean, theirs.mean) and np.allclose(mine.scatter, theirs.scatter)
            elif f.name == "standing":
                assert [set(x) for x in mine] == [set(x) for x in theirs] and any(theirs)
            elif isinstance(theirs, np.ndarray):
                assert np.array_equal(mine, theirs), f.name
            elif isinstance(theirs, Sequence) and not isinstance(theirs, str):
                assert list(mine) == list(theirs), f.name
            else:
                assert mine == theirs, f.name


def test_reembed_drops_the_snapshots_it_makes_stale(saved, embedder, builds) -> None:
    path, answers = saved
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        assert _answers(hs) == answers and builds == []
        assert hs.reembed(NS) == 40
        assert _files(path) == [], "the file held the vectors replaced"
        assert _answers(hs) == answers  # the same model: the same vectors, from a rebuilt snapshot
        assert builds == [NS]
    assert len(_files(path)) == 1


def test_a_save_that_began_before_an_erasure_loses(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Saves write in the background without the files' lock: an erasure of the namespace while a save
    is writing must leave no file behind (the save checks the generation before its rename)."""
    path = tmp_path / "data"
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        hs.record_many(_turns(40), namespace=NS)
        files = hs._recall.snapshot_files
        assert files is not None
        write = SnapshotFiles._write

        def erased_while_writing(target: Path, blobs: list[bytes | memoryview]) -> None:
            write(target, blobs)
            files.remove(NS)  # what forgetting does before its erasure commits

        monkeypatch.setattr(SnapshotFiles, "_write", staticmethod(erased_while_writing))
        assert hs.recall("Biscuit", NS, track=False).hits  # builds the snapshot and queues its save
        hs._recall._pipeline().corpora.wait_for_saves()
        assert _files(path) == []
        monkeypatch.undo()
        hs.record("Biscuit's vet appointment is on Friday.", NS)
        assert hs.recall("Biscuit", NS, track=False).hits
    assert _files(path) == [], "a snapshot read before the erasure is not saved at close either"


def test_the_first_recall_of_a_process_scans_and_the_index_loads_after_it(saved, embedder) -> None:
    """Cold start: until this process loaded the namespace's vector collection, recall scans the
    snapshot's vectors; the collection then loads in the background. A write reaches the index before
    ``record`` returns all the same."""
    path, answers = saved
    config = _config()
    config.recall.exact_vector_max_memories = 0  # a namespace this small is otherwise always scanned
    with Hindsight(path, embedder=embedder, config=config) as hs:
        assert not hs.vectors.loaded(NS, "episodic")  # type: ignore[attr-defined]
        scanned = _answers(hs)
        assert scanned == answers
        hs.vectors.wait_loaded()  # type: ignore[attr-defined]
        assert hs.vectors.loaded(NS, "episodic")  # type: ignore[attr-defined]
        indexed = _answers(hs)
        assert [[mid for mid, _ in a] for a in indexed] == [[mid for mid, _ in a] for a in scanned]
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        memory = hs.record("Biscuit's vet appointment is on Friday.", NS)
        assert memory.id in hs.vectors.ids(NS, "episodic")
        assert any("vet" in h.memory.content for h in hs.recall("When is the vet?", NS, k=3, track=False).hits)


def test_reopening_does_not_open_chroma_to_look_at_its_marker(saved, embedder) -> None:
    """The marker naming the data set that owns the embedded directory's collections (issue 38) is
    looked at once; the store notes it, so a later open stays as cheap as before (no Chroma opened)."""
    path, _ = saved
    with Hindsight(path, embedder=embedder, config=_config()) as hs:
        assert hs.vectors._opened is None  # type: ignore[attr-defined]
        assert _answers(hs)


def test_without_the_scan_the_first_recall_queries_the_index(saved, embedder) -> None:
    path, answers = saved
    config = _config()
    config.recall.scan_until_index_loaded = False
    config.recall.exact_vector_max_memories = 0
    with Hindsight(path, embedder=embedder, config=config) as hs:
        answered = _answers(hs)
        assert hs.vectors.loaded(NS, "episodic")  # type: ignore[attr-defined]
        assert [[mid for mid, _ in a] for a in answered] == [[mid for mid, _ in a] for a in answers]
