"""The JSONL archive under a full disk, torn lines and long namespaces: memories leave the store only
once their records are verified on disk, a torn line never makes the rest of an archive unreadable, and
one namespace's archive trouble stops no other."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from hindsight_core import Hindsight, InvalidInputError, Status
from hindsight_core.lifecycle import archive

LONG = "org:" + "研" * 30  # 282 bytes once percent-quoted into a file name: longer than NAME_MAX


def _age(engine: Hindsight, clock, namespace: str, n: int) -> list[str]:
    """``n`` memories (about 2 KB each in the archive) that the next sweep archives (200 idle days: cold,
    then past the archive age)."""
    ids = [
        engine.record(f"Note {i} of {namespace}.", namespace, metadata={"detail": f"{i}-" + "x" * 1500}).id
        for i in range(n)
    ]
    clock.advance(days=200)
    return ids


def _lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8").split("\n")


def _archived_ids(path: Path) -> list[str]:
    """The memory ids of the file's lines, each line parsed on its own (raises on a torn line)."""
    return [json.loads(line)["memory"]["id"] for line in _lines(path) if line]


class FullDisk:
    """The archive directory on a disk that can be filled and freed: a 64 KiB tmpfs mounted there when
    the test may mount (root), else a write that stops halfway with ``ENOSPC`` injected under the archive
    writer — the same torn line a full disk leaves."""

    def __init__(self, directory: Path, monkeypatch: pytest.MonkeyPatch, real: bool) -> None:
        self.directory = directory
        self.monkeypatch = monkeypatch
        self.mounted = False
        directory.mkdir(parents=True, exist_ok=True)
        if real and shutil.which("mount") and hasattr(os, "geteuid") and os.geteuid() == 0:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(directory)],
                                  capture_output=True)
            self.mounted = done.returncode == 0

    def fill(self) -> None:
        if self.mounted:
            fd = os.open(self.directory / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                while True:
                    os.write(fd, b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
            # leave a little room: the next append starts, then runs out half way
            os.ftruncate(fd, max(0, os.fstat(fd).st_size - 4096))
            os.close(fd)
            return
        real_pwrite = os.pwrite
        calls = {"n": 0}

        def pwrite(fd: int, data: bytes, offset: int) -> int:
            calls["n"] += 1
            if calls["n"] == 1 and len(data) > 1:
                return real_pwrite(fd, data[: len(data) // 2], offset)  # the disk takes half ...
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # ... then is full

        self.monkeypatch.setattr(archive.os, "pwrite", pwrite)

    def free(self) -> None:
        if self.mounted:
            (self.directory / "filler").unlink()
        else:
            self.monkeypatch.undo()

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.directory)], check=False)


@pytest.fixture(params=["tmpfs", "injected"])
def full_disk(request: pytest.FixtureRequest, engine: Hindsight, monkeypatch: pytest.MonkeyPatch) -> Iterator[FullDisk]:
    disk = FullDisk(engine.path / engine.config.lifecycle.archive_dir, monkeypatch, real=request.param == "tmpfs")
    yield disk
    disk.close()


def test_a_full_disk_during_sweep_loses_nothing_and_leaves_no_torn_line(
    engine: Hindsight, clock, full_disk: FullDisk
) -> None:
    first = _age(engine, clock, "user:disk", 2)
    engine.sweep()  # a first, successful archive: the file exists with whole lines
    path = engine.archive_path("user:disk")
    before = path.read_bytes()
    assert len(_lines(path)) == 3 and sorted(_archived_ids(path)) == sorted(first)

    second = _age(engine, clock, "user:disk", 6)
    full_disk.fill()
    report = engine.sweep()
    assert "No space left on device" in report.errors["user:disk"]
    assert report.archived == 0 and report.not_archived == 6
    assert path.read_bytes() == before  # cut back: no torn line
    kept = engine.store.get_many(second)
    assert len(kept) == 6 and {m.status for m in kept.values()} == {Status.COLD}  # 0 lost

    full_disk.free()
    report = engine.sweep()
    assert report.errors == {} and sorted(report.archived_ids) == sorted(second)
    assert sorted(_archived_ids(path)) == sorted(first + second)  # every line whole
    assert engine.restore(path).restored == 8


def test_a_torn_tail_left_by_a_crash_is_cut_before_the_next_append(engine: Hindsight, clock) -> None:
    first = _age(engine, clock, "user:crash", 1)
    engine.sweep()
    path = engine.archive_path("user:crash")
    whole = path.read_bytes()
    with path.open("ab") as fh:  # a crash in the middle of an append (the memories were not deleted)
        fh.write(whole[: len(whole) // 2])
    second = _age(engine, clock, "user:crash", 2)
    assert engine.sweep().archived == 2
    contents = archive.read(path)
    assert contents.damaged == []
    assert {m.id for m, _, _ in contents.records} == set(first) | set(second)
    assert path.read_bytes().startswith(whole) and path.read_bytes().count(b"\n") == 3


def test_restore_of_a_torn_archive_restores_every_whole_record_and_reports_the_torn_one(
    engine: Hindsight, clock
) -> None:
    ids = _age(engine, clock, "user:torn", 3)
    engine.sweep()
    path = engine.archive_path("user:torn")
    lines = path.read_bytes().split(b"\n")[:3]
    # line 1 whole; line 2: a torn write with a whole record glued behind it (an older version appended
    # after a full disk); line 3 whole; line 4: the torn tail of the last write
    path.write_bytes(lines[0] + b"\n" + lines[1][:40] + lines[1] + b"\n" + lines[2] + b"\n" + lines[2][:50])
    report = engine.restore(path)
    assert report.restored == 3 and report.records == 3
    assert [(d.line, d.recovered) for d in report.damaged] == [(2, True), (4, False)]
    assert "torn" in report.damaged[1].reason
    assert all(engine.get(i) is not None and engine.get(i).status == Status.ACTIVE for i in ids)  # type: ignore[union-attr]


def test_a_file_with_no_whole_record_is_not_an_archive(engine: Hindsight, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "hindsight-archive/1", "memo', encoding="utf-8")
    with pytest.raises(InvalidInputError):
        engine.restore(bad)


def test_a_long_namespace_is_archived_with_the_others_and_forgotten_without_raising(
    engine: Hindsight, clock
) -> None:
    long_ids = [engine.record(f"long namespace note {i}", LONG).id for i in range(2)]
    short = engine.record("short namespace note", "user:short").id
    clock.advance(days=200)
    report = engine.sweep()
    assert report.errors == {}
    assert sorted(report.archived_ids) == sorted([*long_ids, short])
    path = engine.archive_path(LONG)
    assert path.exists() and len(path.name) == 64 + len(".jsonl")
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert {x["namespace"] for x in lines} == {LONG} and {x["memory"]["id"] for x in lines} == set(long_ids)
    assert engine.archive_path("user:short").exists()

    engine.record("back again", LONG)
    assert engine.forget_namespace(LONG) == 1
    assert not engine.archive_path(LONG).exists() and engine.find(LONG) == []
    assert engine.archive_path("user:short").exists()


def test_a_namespace_whose_archive_cannot_be_written_stops_no_other(engine: Hindsight, clock) -> None:
    blocked = [engine.record(f"blocked note {i}", "user:blocked").id for i in range(2)]
    free = engine.record("free note", "user:free").id
    clock.advance(days=200)
    engine.archive_path("user:blocked").mkdir(parents=True)  # not a file: the append cannot open it
    report = engine.sweep()
    assert set(report.errors) == {"user:blocked"} and report.not_archived == 2
    assert report.archived_ids == [free] and engine.get(free) is None
    assert len(engine.store.get_many(blocked)) == 2


def test_an_archive_under_the_old_quoted_name_is_still_found_then_migrated(engine: Hindsight, clock) -> None:
    old = _age(engine, clock, "user:legacy", 1)
    engine.sweep()
    root = engine.path / engine.config.lifecycle.archive_dir
    legacy = root / f"{quote('user:legacy', safe='')}.jsonl"
    engine.archive_path("user:legacy").rename(legacy)  # as an older version left it
    assert engine.archive_path("user:legacy") == legacy
    new = _age(engine, clock, "user:legacy", 1)
    assert engine.sweep().archived == 1
    assert not legacy.exists()
    path = engine.archive_path("user:legacy")
    assert {m.id for m, _, _ in archive.read(path).records} == {*old, *new}

    path.rename(legacy)
    assert engine.forget_namespace("user:legacy") == 0  # only the legacy archive holds it
    assert not legacy.exists()


def test_forget_namespace_does_not_raise_over_a_completed_erase_when_the_archive_cannot_go(
    engine: Hindsight, clock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _age(engine, clock, "user:stuck", 1)
    engine.sweep()
    path = engine.archive_path("user:stuck")
    kept = engine.record("recorded after the sweep", "user:stuck").id
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if self == path:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    assert engine.forget_namespace("user:stuck") == 1  # the erase committed: no exception over it
    assert engine.get(kept) is None and engine.find("user:stuck") == []
    assert any("could not delete the archive" in r.getMessage() for r in caplog.records)


def test_forget_of_a_root_reaches_a_child_held_only_in_its_archive(engine: Hindsight, clock) -> None:
    """A child whose memories were all archived has no row left in the store: its archive file is what
    ``forget_namespace`` of the root must find (by the namespace its records carry)."""
    engine.record("archived note of a child", "user:ana/notes")
    engine.record("archived note of a neighbour", "user:anabel/notes")
    clock.advance(days=200)
    assert len(engine.sweep().archived_ids) == 2
    assert engine.find("user:ana/notes") == [] and engine.archive_path("user:ana/notes").exists()
    engine.record("a turn in the root", "user:ana")
    assert engine.forget_namespace("user:ana") == 1
    assert not engine.archive_path("user:ana/notes").exists()
    assert engine.archive_path("user:anabel/notes").exists()  # the wall: a neighbour's archive stays
