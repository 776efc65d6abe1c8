"""One process owns an embedded data directory; others get a clear error, never a corrupted index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core import DataDirectoryInUseError, Hindsight
from hindsight_core.vectors.chroma import ChromaVectorIndex

CHILD = Path(__file__).with_name("owner_child.py")
NS = "own:test"


class Child:
    """One ``owner_child.py`` process; it opens the directory once ``go`` exists."""

    def __init__(self, data: Path, go: Path, n_events: int = 20) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(data), str(go), str(n_events)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    def line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            self.proc.wait()
            assert self.proc.stderr is not None
            pytest.fail(f"child exited with {self.proc.returncode} without reporting:\n{self.proc.stderr.read()}")
        return line

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=120) == 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        if child.proc.poll() is None:
            child.kill()


def _assert_healthy(hs: Hindsight, n: int) -> None:
    """``n`` memories stored and every one of them found by the vector index with its own vector."""
    ids = [r[0] for r in hs.store.query("SELECT id FROM memories WHERE namespace = ?", (NS,))]
    assert len(ids) == n
    assert hs.vectors.ids(NS, "episodic") == set(ids)
    vectors = hs.store.get_embeddings(hs.embedder.name, ids)
    for mid in ids:
        assert mid in {h.memory_id for h in hs.vectors.query(NS, "episodic", vectors[mid], 3)}
    assert hs.recall("topic 3 item", namespace=NS, k=3).hits


def test_processes_opening_a_new_directory_at_once_one_owns_the_others_are_told(
    tmp_path: Path, embedder, children: list[Child]
) -> None:
    data, go = tmp_path / "new-data", tmp_path / "go"
    children += [Child(data, go) for _ in range(3)]
    go.touch()
    first = [child.line() for child in children]
    owners = [c for c, line in zip(children, first, strict=True) if line.startswith("OWNER")]
    busy = [line for line in first if line.startswith("BUSY")]
    assert len(owners) == 1 and len(busy) == 2, first
    owner_pid = owners[0].proc.pid
    for message in busy:
        assert str(data) in message and f"process {owner_pid}" in message
        assert "chroma_url=" in message and "redis_url=" in message and ".close()" in message
    for child in children:
        if child is not owners[0]:
            assert child.proc.wait(timeout=60) == 0
    assert owners[0].line() == "RECORDED 20"
    owners[0].release()
    with Hindsight(data, embedder=embedder, background_consolidation=False) as hs:
        _assert_healthy(hs, 20)


def test_second_process_is_refused_before_touching_anything_then_admitted_after_close(
    tmp_path: Path, embedder, children: list[Child]
) -> None:
    data, go = tmp_path / "data", tmp_path / "go"
    go.touch()
    hs = Hindsight(data, embedder=embedder, background_consolidation=False)
    hs.record_many([f"Parent note {i}: topic {i % 7}, item {i}" for i in range(10)], namespace=NS)
    before = {p: p.stat().st_mtime_ns for p in data.rglob("*") if p.is_file() and p.name != ".lock"}
    children.append(Child(data, go))
    line = children[-1].line()
    assert line.startswith("BUSY") and f"process {os.getpid()}" in line, line
    assert children[-1].proc.wait(timeout=60) == 0
    after = {p: p.stat().st_mtime_ns for p in data.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before, "the refused process changed files in the directory"
    hs.close()
    children.append(Child(data, go))
    assert children[-1].line().startswith("OWNER")
    assert children[-1].line() == "RECORDED 20"
    children[-1].release()
    with Hindsight(data, embedder=embedder, background_consolidation=False) as again:
        _assert_healthy(again, 30)


def test_a_sigkilled_owner_leaves_no_stale_lock(tmp_path: Path, embedder, children: list[Child]) -> None:
    data, go = tmp_path / "data", tmp_path / "go"
    go.touch()
    children.append(Child(data, go))
    assert children[-1].line().startswith("OWNER")
    assert children[-1].line() == "RECORDED 20"
    with pytest.raises(DataDirectoryInUseError, match=f"process {children[-1].proc.pid}"):
        Hindsight(data, embedder=embedder)
    children[-1].kill()
    with Hindsight(data, embedder=embedder, background_consolidation=False) as hs:
        hs.reconcile()
        _assert_healthy(hs, 20)


def test_a_second_engine_in_the_same_process_is_refused_until_the_first_closes(tmp_path: Path, embedder) -> None:
    first = Hindsight(tmp_path, embedder=embedder)
    try:
        with pytest.raises(DataDirectoryInUseError, match="another Hindsight engine in this process"):
            Hindsight(tmp_path, embedder=embedder)
        first.record("still the only owner", namespace=NS)
    finally:
        first.close()
    with Hindsight(tmp_path, embedder=embedder) as second:
        assert [m.content for m in second.find(NS)] == ["still the only owner"]


def test_a_failed_open_releases_the_directory(tmp_path: Path, embedder) -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        Hindsight(tmp_path, embedder=embedder, no_such_option=1)
    with Hindsight(tmp_path, embedder=embedder) as hs:
        hs.record("opened after a failed attempt", namespace=NS)


def test_an_injected_vector_index_needs_no_directory_owner(tmp_path: Path, embedder) -> None:
    """Whoever injects the index decides how it is shared; the SQLite file is multi-process safe."""
    vectors = ChromaVectorIndex(tmp_path / "chroma")
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=vectors) as a, \
            Hindsight(tmp_path / "data", embedder=embedder, vector_index=vectors) as b:
        mem = a.record("written by one engine", namespace=NS)
        assert b.get(mem.id) == mem


def test_the_shared_engine_is_reused_within_a_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hindsight_core.engine as engine_module
    from hindsight_core import shared_engine

    monkeypatch.setenv("HINDSIGHT_PATH", str(tmp_path / "shared"))
    monkeypatch.setattr(engine_module, "_shared", None)
    hs = shared_engine()
    try:
        assert shared_engine() is hs
        hs.close()
        reopened = shared_engine()  # a closed shared engine is replaced, and the directory is free for it
        assert reopened is not hs
    finally:
        assert engine_module._shared is not None
        engine_module._shared.close()
