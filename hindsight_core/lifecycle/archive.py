"""Eviction: hot → cold → JSONL archive, and back (docs/architecture.md, lifecycle).

An archive is one JSONL file per namespace under ``<data dir>/archive``, named by a digest of the
namespace (a namespace may be longer than a file name can be); each record carries its namespace. Each
line is a whole memory with its external id and edges. Records are appended, fsynced and read back
*before* the memories are deleted: a write that fails (a full disk) is cut back to the old end of the
file and the memories stay in the store; a crash between the append and the delete leaves a duplicate
line (restore skips ids already present), never a loss. Reading is tolerant: a torn or garbled line is
reported and the whole records around it still restore."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hindsight_core.errors import ArchiveError, InvalidInputError
from hindsight_core.lifecycle.types import ArchiveDamage
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Edge, Memory
from hindsight_core.validation import check_namespace

FORMAT = "hindsight-archive/1"
SUFFIX = ".jsonl"
#: Longest file name (bytes) common file systems accept; longer legacy names were never created.
_NAME_MAX = 255
#: How every record line starts (``json.dumps`` puts ``format`` first): where a record glued behind a
#: torn line by an older version can be found again.
_RECORD_START = '{"format": '

Record = tuple[Memory, str | None, list[Edge]]


@dataclass
class Contents:
    """What :func:`read` found: the whole records (the last line of an id wins) and the damaged lines."""

    records: list[Record] = field(default_factory=list)
    damaged: list[ArchiveDamage] = field(default_factory=list)


def archive_file(root: Path, namespace: str) -> Path:
    """``<root>/<sha256 of the namespace>.jsonl``: a fixed-length name whatever the namespace holds."""
    return root / f"{hashlib.sha256(namespace.encode('utf-8')).hexdigest()}{SUFFIX}"


def legacy_file(root: Path, namespace: str) -> Path | None:
    """The percent-quoted name older versions wrote (``user%3A42.jsonl``), or ``None`` where that name is
    too long to have ever existed."""
    name = f"{quote(namespace, safe='')}{SUFFIX}"
    return root / name if len(name.encode("utf-8")) <= _NAME_MAX else None


def _is_file(path: Path | None) -> bool:
    if path is None:
        return False
    try:
        return path.is_file()
    except OSError:
        return False


def existing(root: Path, namespace: str) -> list[Path]:
    """The namespace's archive files that exist (the digest name, and a legacy one not yet migrated)."""
    return [p for p in (archive_file(root, namespace), legacy_file(root, namespace)) if p is not None and _is_file(p)]


def namespace_of(path: Path) -> str | None:
    """The namespace an archive file holds, read from its first whole record (the name is a digest);
    ``None`` when no line of it can be read."""
    try:
        with path.open("rb") as fh:
            for raw in fh:
                try:
                    found = json.loads(raw.decode("utf-8")).get("namespace")
                except (ValueError, AttributeError):
                    continue
                if isinstance(found, str):
                    return found
    except OSError:
        return None
    return None


def namespaces(root: Path) -> set[str]:
    """Every namespace with an archive file under ``root`` (what ``forget_namespace`` of a root must
    also reach when a child's memories were all archived)."""
    if not root.is_dir():
        return set()
    return {ns for p in sorted(root.glob(f"*{SUFFIX}")) if (ns := namespace_of(p)) is not None}


def locate(root: Path, namespace: str) -> Path:
    """Where the namespace's archive is: the digest name, or a legacy file that was never migrated."""
    current = archive_file(root, namespace)
    legacy = legacy_file(root, namespace)
    return legacy if not _is_file(current) and legacy is not None and _is_file(legacy) else current


def migrate(root: Path, namespace: str) -> Path:
    """Rename a legacy archive to its digest name (before the first append under the new name), so one
    namespace never has two files; returns the digest path."""
    current = archive_file(root, namespace)
    legacy = legacy_file(root, namespace)
    if legacy is not None and _is_file(legacy) and not _is_file(current):
        os.replace(legacy, current)
        _fsync_dir(root)
    return current


def records(
    store: RelationalStore, memories: list[Memory], archived_at: str, reason: str
) -> list[dict[str, Any]]:
    ext = store.external_ids([m.id for m in memories])
    out = []
    for m in memories:
        edges = store.edges(m.id, direction="out") + store.edges(m.id, direction="in")
        out.append(
            {
                "format": FORMAT,
                "namespace": m.namespace,
                "archived_at": archived_at,
                "reason": reason,
                "external_id": ext.get(m.id),
                "memory": m.model_dump(mode="json"),
                "edges": [e.model_dump(mode="json") for e in edges],
            }
        )
    return out


def _fsync_dir(path: Path) -> None:
    """A new or renamed file is durable only once its directory entry is."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _mkdirs(path: Path) -> None:
    """Create the directory (and parents), fsyncing each parent whose entries changed."""
    if path.is_dir():
        return
    _mkdirs(path.parent)
    with contextlib.suppress(FileExistsError):
        path.mkdir()
        _fsync_dir(path.parent)


def _parse(line: str) -> Record:
    data = json.loads(line)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"unknown format {data.get('format') if isinstance(data, dict) else data!r}")
    memory = Memory.model_validate(data["memory"])
    check_namespace(memory.namespace)  # a hand-edited archive must not bypass the namespace rules
    edges = [Edge.model_validate(e) for e in data.get("edges", [])]
    ext = data.get("external_id")
    return memory, ext if isinstance(ext, str) else None, edges


def _whole_tail(fd: int, size: int) -> int:
    """Where the last whole line of the file ends. A tail without its newline is a write cut short (a
    crash, an older version hitting a full disk): it is dropped unless it is a whole record, which only
    lacks the newline."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    start = size
    while start > 0:
        step = min(start, 65_536)
        chunk = os.pread(fd, step, start - step)
        found = chunk.rfind(b"\n")
        if found >= 0:
            start = start - step + found + 1
            break
        start -= step
    tail = os.pread(fd, size - start, start)
    try:
        _parse(tail.decode("utf-8"))
    except Exception:
        return start  # torn: cut it
    os.pwrite(fd, b"\n", size)
    return size + 1


def append(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """Append records durably, or not at all. A failed write (``ENOSPC``, ``EIO``…) is truncated back to
    the file's old end, so no partial line stays behind; after the fsync the bytes are read back and each
    record's id checked, so the caller deletes memories only once their records are verified on disk.
    Raises :class:`ArchiveError` (the file is as it was)."""
    lines = list(lines)
    payload = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
    expected = [line["memory"]["id"] for line in lines]
    try:
        _mkdirs(path.parent)
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ArchiveError(f"cannot open archive {str(path)!r}: {exc}") from exc
    try:
        if created:
            try:
                _fsync_dir(path.parent)
            except OSError as exc:
                raise ArchiveError(f"cannot make archive {str(path)!r} durable: {exc}") from exc
        size = os.fstat(fd).st_size
        start = size
        try:
            start = _whole_tail(fd, size)
            if start < size:
                os.ftruncate(fd, start)
            written = 0
            while written < len(payload):
                written += os.pwrite(fd, payload[written:], start + written)
            os.fsync(fd)
        except OSError as exc:
            _cut(fd, start)
            raise ArchiveError(f"cannot append to archive {str(path)!r}: {exc}") from exc
        _verify(fd, start, len(payload), expected, path)
    finally:
        os.close(fd)


def drop(path: Path, ids: set[str]) -> int:
    """Rewrite the archive without the records of ``ids`` (``forget`` of archived memories): the kept
    lines go to a temporary file beside it, which is fsynced and renamed over the archive, so a crash
    leaves the old file or the new one, never a mix. A damaged line that names one of the ids is dropped
    too. Returns how many lines were dropped; raises :class:`ArchiveError` (the file is as it was)."""
    try:
        raw_lines = path.read_bytes().splitlines(keepends=True)
    except OSError as exc:
        raise ArchiveError(f"cannot read archive {str(path)!r}: {exc}") from exc
    needles = [i.encode() for i in ids]
    kept = [line for line in raw_lines if not any(n in line for n in needles)]
    dropped = len(raw_lines) - len(kept)
    if not dropped:
        return 0
    temporary = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            payload = b"".join(kept)
            written = 0
            while written < len(payload):
                written += os.write(fd, payload[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ArchiveError(f"cannot rewrite archive {str(path)!r}: {exc}") from exc
    return dropped


def _cut(fd: int, size: int) -> None:
    """Truncate a failed append back to where it started (truncating frees space, so it works on a full
    disk); if even that fails, the next append drops the torn tail."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, size)
        os.fsync(fd)


def _verify(fd: int, start: int, length: int, expected: list[str], path: Path) -> None:
    """Read the appended bytes back and parse them: the delete that follows relies on these records."""
    try:
        data = os.pread(fd, length, start)
        if len(data) != length:
            raise OSError(errno.EIO, f"read back {len(data)} of {length} bytes")
        found = [_parse(line)[0].id for line in data.decode("utf-8").splitlines()]
    except Exception as exc:
        _cut(fd, start)
        raise ArchiveError(f"archive {str(path)!r} did not read back: {exc}") from exc
    if found != expected:
        _cut(fd, start)
        raise ArchiveError(f"archive {str(path)!r} read back other records than were written")


def _salvage(line: str) -> Record | None:
    """A record glued behind a torn line (older versions appended after a partial write)."""
    at = line.find(_RECORD_START, 1)
    while at > 0:
        with contextlib.suppress(Exception):
            return _parse(line[at:])
        at = line.find(_RECORD_START, at + 1)
    return None


def read(path: Path) -> Contents:
    """Every whole record of an archive (the last line of an id wins) and the lines that are not (torn,
    garbled). A missing file, or one with no record at all, raises :class:`InvalidInputError`."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(f"archive_path must be a path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"no archive file at {str(path)!r}")
    found: dict[str, Record] = {}
    contents = Contents()
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                record = _parse(raw.decode("utf-8"))
            except Exception as exc:
                reason = "torn: no end of line" if not raw.endswith(b"\n") else f"not a record: {exc}"
                salvaged = _salvage(raw.decode("utf-8", errors="replace"))
                contents.damaged.append(ArchiveDamage(line=number, reason=reason[:300], recovered=salvaged is not None))
                if salvaged is None:
                    continue
                record = salvaged
            found[record[0].id] = record
    if not found and contents.damaged:
        first = contents.damaged[0]
        raise InvalidInputError(f"{path}:{first.line} is not an archive record ({first.reason}); no record found")
    contents.records = list(found.values())
    return contents
