"""Callers see the project's errors only: a closed engine raises ``EngineClosedError``, a failing
SQLite database ``BackendUnavailableError`` (never a raw ``sqlite3`` error, never ``InvalidInputError``)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import BackendUnavailableError, EngineClosedError, Hindsight, InvalidInputError
from hindsight_core.store.sql import RelationalStore

NS = "u:1"


@pytest.fixture
def closed(tmp_path: Path, clock: Any, embedder: Any) -> Iterator[tuple[Hindsight, str]]:
    hs = Hindsight(tmp_path, clock=clock, embedder=embedder)
    mem = hs.record("I'm allergic to peanuts", namespace=NS, session_id="s1")
    hs.add_procedure("deploy the app", ["run the tests"], NS)
    hs.edit_transcript(NS, "chat", lambda _: [{"content": "hi"}])
    hs.close()
    yield hs, mem.id


CLOSED_CALLS: list[tuple[str, Callable[[Hindsight, str], object]]] = [
    ("record", lambda hs, _: hs.record("a new memory", namespace=NS)),
    ("record_many", lambda hs, _: hs.record_many(["one", "two"], NS)),
    ("get", lambda hs, mid: hs.get(mid)),
    ("find", lambda hs, _: hs.find(NS)),
    ("working", lambda hs, _: hs.working(NS, "s1")),
    ("sensory", lambda hs, _: hs.sensory(NS, "s1")),
    ("namespaces", lambda hs, _: hs.namespaces()),
    ("forget", lambda hs, mid: hs.forget(mid)),
    ("forget_namespace", lambda hs, _: hs.forget_namespace(NS)),
    ("reconcile", lambda hs, _: hs.reconcile()),
    ("stats", lambda hs, _: hs.stats()),
    ("recall", lambda hs, _: hs.recall("what am I allergic to?", NS)),
    ("consolidate", lambda hs, _: hs.consolidate(NS)),
    ("end_session", lambda hs, _: hs.end_session(NS, "s1")),
    ("add_procedure", lambda hs, _: hs.add_procedure("ship it", ["tag"], NS)),
    ("feedback", lambda hs, mid: hs.feedback(mid, True)),
    ("sweep", lambda hs, _: hs.sweep()),
    ("restore", lambda hs, _: hs.restore(hs.archive_path(NS))),
    ("transcript", lambda hs, _: hs.transcript(NS, "chat")),
    ("edit_transcript", lambda hs, _: hs.edit_transcript(NS, "chat", lambda e: [*(e or []), {"c": 1}])),
    ("arecord", lambda hs, _: asyncio.run(hs.arecord("a new memory", NS))),
    ("arecall", lambda hs, _: asyncio.run(hs.arecall("peanuts", NS))),
    ("afind", lambda hs, _: asyncio.run(hs.afind(NS))),
    ("aconsolidate", lambda hs, _: asyncio.run(hs.aconsolidate(NS))),
    ("atranscript", lambda hs, _: asyncio.run(hs.atranscript(NS, "chat"))),
    ("store.query", lambda hs, _: hs.store.query("SELECT COUNT(*) FROM memories")),
]


@pytest.mark.parametrize("call", [c for _, c in CLOSED_CALLS], ids=[n for n, _ in CLOSED_CALLS])
def test_a_closed_engine_refuses_use(closed: tuple[Hindsight, str], call: Callable[[Hindsight, str], object]) -> None:
    hs, memory_id = closed
    with pytest.raises(EngineClosedError, match="closed"):
        call(hs, memory_id)


def test_every_public_method_is_guarded(closed: tuple[Hindsight, str]) -> None:
    """Whatever public method a facet adds, the one mechanism covers it (sync and async alike)."""
    hs, _ = closed
    names = [n for n in dir(hs) if not n.startswith("_") and callable(getattr(hs, n))]
    unguarded = [n for n in names if n not in ("close", "aclose", "now") and not getattr(
        getattr(type(hs), n), "_requires_open", False)]
    assert unguarded == []


def test_close_stays_idempotent_and_data_survives(tmp_path: Path, clock: Any, embedder: Any) -> None:
    hs = Hindsight(tmp_path, clock=clock, embedder=embedder)
    mem = hs.record("I'm allergic to peanuts", namespace=NS)
    hs.close()
    hs.close()
    asyncio.run(hs.aclose())
    with Hindsight(tmp_path, clock=clock, embedder=embedder) as again:
        assert again.get(mem.id) == mem


def test_a_locked_database_is_backend_unavailable(tmp_path: Path, clock: Any, embedder: Any) -> None:
    """Another process holds the write lock past the busy timeout: the write fails with the project's
    error, names the operation, changes nothing, and the engine writes again once the lock is gone."""
    with Hindsight(tmp_path, clock=clock, embedder=embedder) as hs:
        hs.record("I'm allergic to peanuts", namespace=NS)
        hs.store.execute("PRAGMA busy_timeout=200")
        other = sqlite3.connect(tmp_path / "hindsight.sqlite3", isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(BackendUnavailableError, match=r"begin.*database is locked") as info:
                hs.record("my budget is 50 euros", namespace=NS)
            assert not isinstance(info.value, InvalidInputError)
            assert isinstance(info.value.__cause__, sqlite3.OperationalError)
            with pytest.raises(BackendUnavailableError, match="locked"):
                hs.edit_transcript(NS, "chat", lambda _: [{"content": "hi"}])
        finally:
            other.execute("ROLLBACK")
            other.close()
        hs.record("my budget is 50 euros", namespace=NS)
        assert [m.content for m in hs.find(NS)] == ["I'm allergic to peanuts", "my budget is 50 euros"]


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB filesystem (tmpfs), so SQLite meets a genuinely full disk."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_backend_unavailable_and_rolls_back(tiny_disk: Path) -> None:
    store = RelationalStore(tiny_disk / "hindsight.sqlite3")
    try:
        filler = tiny_disk / "filler"
        with filler.open("wb", buffering=0) as fh:  # fill what is left of the disk
            try:
                while True:
                    fh.write(b"\0" * 4096)
            except OSError:
                pass
        big = uuid.uuid4().hex * 4_000
        with pytest.raises(BackendUnavailableError, match="full") as info, store.transaction() as tx:
            for i in range(20):
                tx.execute("INSERT INTO transcripts(namespace, tkey, created_at, updated_at) VALUES (?, ?, 0, 0)",
                           (NS, f"{big}{i}"))
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)
        filler.unlink()
        # the failed transaction was rolled back: nothing of it is visible, and the next one commits
        assert store.query("SELECT COUNT(*) FROM transcripts") == [(0,)]
        with store.transaction() as tx:
            tx.execute("INSERT INTO transcripts(namespace, tkey, created_at, updated_at) VALUES (?, 'k', 0, 0)", (NS,))
        assert store.query("SELECT COUNT(*) FROM transcripts") == [(1,)]
    finally:
        store.close()
