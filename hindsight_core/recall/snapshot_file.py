"""Recall's per-namespace snapshots on disk, so opening a large store does not rebuild them.

Building a snapshot (``corpus.py``) is linear Python work: at 100k memories about 10 s of reading rows,
tokenising and deriving per-memory data, paid by the first recall of every process. A snapshot is
therefore written next to the store, as flat arrays (vectors, keyword postings, per-memory columns)
that load as read-only memory maps in a fraction of that, keyed by the change-log position it reflects
(``store/changes.py``): a loaded snapshot is brought up to date from the change log like an in-memory
one (new memories appended, a rebuild where one is needed anyway).

Only an engine that owns its embedded directory (SQLite, embedded Chroma, the directory lock) keeps
these files: processes sharing a database each keep their own snapshot in memory, and a file written by
one could outlive another's erasure.

A file is trusted only when everything checks: the magic, the format version, the data set, the
namespace, the embedder (name and dimension), the size, and a CRC-32 over the content. It is written to
a temporary file and renamed into place, so a reader sees a whole file or the previous one; a torn,
stale or foreign file is ignored (and replaced by the next save). Erasing a memory or a namespace
deletes the namespace's files before the erasure commits; a save that began before an erasure is
dropped (:meth:`SnapshotFiles.generation`). Saves run in the background (``corpus.CorpusCache``) and
write without the lock, which guards only the generation check and the rename: a recall that loads
or an erasure never waits for a save's writing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import sys
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

log = logging.getLogger(__name__)

MAGIC = b"HSRSNAP\x00"
VERSION = 9  # 2: the vector moments and the recency order; 3: the speaker changes (``reply``), roles in digests;
#: 4: standing facts by meaning (one kind, ``profile.STATE``); 5: content-free turns (``profile.CONTENT_FREE``);
#: 6: a question is no standing fact (``profile.is_question``); 7: a starting memory's own kind (``profile.DEFAULT``);
#: 8: a distilled fact that is no standing state (``profile.FACT``); 9: a Chinese statement with its subject
#: dropped is the speaker's own (``profile.said_of_self``)
_ALIGN = 64

T = TypeVar("T")


class SnapshotFiles:
    """The snapshot files of one data directory: ``<directory>/<digest of namespace and flags>.snap``."""

    def __init__(self, directory: Path, identity: dict[str, Any]) -> None:
        self.directory = directory
        #: What a file must have been written for (data set, embedder); compared field by field on load.
        self.identity = identity
        self._lock = threading.Lock()
        self._generations: dict[str, int] = {}
        self._all = 0
        # a save cut short by a crash: the directory is this engine's alone, so no writer is mid-way
        for left in directory.glob(".*.tmp") if directory.exists() else ():
            with contextlib.suppress(OSError):
                left.unlink()

    def _name(self, namespace: str, include_cold: bool) -> str:
        digest = hashlib.sha256(f"{namespace}\x00{int(include_cold)}".encode()).hexdigest()[:40]
        return f"{digest}.snap"

    def generation(self, namespace: str) -> int:
        """Changes with every removal of the namespace's files: a snapshot read before a removal is never
        written after it."""
        with self._lock:
            return self._all + self._generations.get(namespace, 0)

    # -- write ------------------------------------------------------------------------------------
    def save(
        self, namespace: str, include_cold: bool, generation: int, values: dict[str, Any], arrays: dict[str, np.ndarray]
    ) -> bool:
        """Write the snapshot (temporary file, then rename); ``False`` when the namespace's files were
        removed since ``generation`` (nothing is written) or the disk refused."""
        blobs: list[bytes | memoryview] = []
        table: dict[str, list[Any]] = {}
        offset = 0

        def put(data: bytes | memoryview) -> int:
            nonlocal offset
            start = offset
            blobs.append(data)
            offset += len(data)
            pad = -offset % _ALIGN
            if pad:
                blobs.append(b"\0" * pad)
                offset += pad
            return start

        text = json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode()
        values_at = put(text)
        for name, array in arrays.items():
            array = np.ascontiguousarray(array)
            table[name] = [array.dtype.str, list(array.shape), put(array.reshape(-1).view(np.uint8).data)]
        crc = 0
        for blob in blobs:
            crc = zlib.crc32(blob, crc)
        header = json.dumps(
            {
                "version": VERSION,
                "identity": self.identity,
                "namespace": namespace,
                "include_cold": include_cold,
                "values": [values_at, len(text)],
                "arrays": table,
                "content": offset,
                "crc": crc,
            }
        ).encode()
        head = MAGIC + len(header).to_bytes(8, "little") + header
        head += b"\0" * (-len(head) % _ALIGN)
        name = self._name(namespace, include_cold)
        if self.generation(namespace) != generation:
            return False
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            # written and synced without the lock (seconds at 100k memories): an erasure meanwhile
            # deletes the temporary file or changes the generation, and the rename below is refused
            self._write(temporary, [head, *blobs])
            with self._lock:
                if self._all + self._generations.get(namespace, 0) != generation:
                    temporary.unlink(missing_ok=True)
                    return False
                os.replace(temporary, self.directory / name)
        except OSError as exc:  # a cache: a full disk costs the next cold start, not this recall
            log.warning("recall snapshot not saved: %s", exc)
            with contextlib.suppress(OSError):
                temporary.unlink()
            return False
        return True

    @staticmethod
    def _write(path: Path, blobs: list[bytes | memoryview]) -> None:
        with open(path, "wb") as f:
            for blob in blobs:
                f.write(blob)
            f.flush()
            os.fsync(f.fileno())

    # -- read -------------------------------------------------------------------------------------
    def load(
        self, namespace: str, include_cold: bool, restore: Callable[[dict[str, Any], dict[str, np.ndarray]], T]
    ) -> T | None:
        """``restore(values, arrays)`` of the saved snapshot, or ``None`` when there is no file or it fails
        a check. The checksum runs in a thread while ``restore`` works (``zlib`` releases the GIL), and
        nothing restored is returned unless it matches."""
        path = self.directory / self._name(namespace, include_cold)
        try:
            with open(path, "rb") as f:
                # Windows does not delete or replace a mapped file, and an erase must delete it
                mapped: mmap.mmap | bytes = (
                    f.read() if sys.platform == "win32" else mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                )
        except (OSError, ValueError):  # missing, or empty (mmap refuses a zero-length file)
            return None
        try:
            header, content = self._header(mapped, namespace, include_cold)
        except (ValueError, KeyError, TypeError) as exc:
            log.info("recall snapshot %s ignored: %s", path.name, exc)
            return None
        crc: list[int] = []
        checking = threading.Thread(target=lambda: crc.append(zlib.crc32(content)), name="hindsight-snapshot-crc")
        checking.start()
        failure: Exception | None = None
        restored: T | None = None
        try:
            at, size = header["values"]
            values = json.loads(bytes(content[at : at + size]))
            arrays: dict[str, np.ndarray] = {}
            for name, (dtype, shape, offset) in header["arrays"].items():
                count = int(np.prod(shape)) if shape else 1
                array = np.frombuffer(content, dtype=np.dtype(dtype), count=count, offset=int(offset))
                arrays[name] = array.reshape(shape)
            restored = restore(values, arrays)
        except Exception as exc:  # damaged content can fail anywhere in restoring; the checksum says which
            failure = exc
        checking.join()
        if crc != [header["crc"]]:
            log.info("recall snapshot %s ignored: checksum mismatch", path.name)
            return None
        if failure is not None:
            log.warning("recall snapshot %s could not be restored: %s: %s", path.name, type(failure).__name__, failure)
            return None
        return restored

    def _header(
        self, mapped: mmap.mmap | bytes, namespace: str, include_cold: bool
    ) -> tuple[dict[str, Any], memoryview]:
        """The header, checked against what this engine expects, and the content it describes."""
        if mapped[: len(MAGIC)] != MAGIC:
            raise ValueError("not a snapshot file")
        length = int.from_bytes(mapped[len(MAGIC) : len(MAGIC) + 8], "little")
        start = len(MAGIC) + 8
        header = json.loads(mapped[start : start + length])
        base = start + length + (-(start + length) % _ALIGN)
        wanted = {"version": VERSION, "identity": self.identity, "namespace": namespace, "include_cold": include_cold}
        for key, value in wanted.items():
            if header.get(key) != value:
                raise ValueError(f"written for another {key}")
        if len(mapped) != base + int(header["content"]):
            raise ValueError("truncated or overlong")
        return header, memoryview(mapped)[base:]

    # -- erase ------------------------------------------------------------------------------------
    def remove(self, namespace: str | None = None) -> None:
        """Delete the namespace's files (every file with ``None``), temporary ones included; a save still
        holding an older generation is then refused."""
        with self._lock:
            if namespace is None:
                self._all += 1
                patterns = ["*.snap", ".*.tmp"]
            else:
                self._generations[namespace] = self._generations.get(namespace, 0) + 1
                names = [self._name(namespace, cold) for cold in (False, True)]
                patterns = [*names, *(f".{name}.*.tmp" for name in names)]
            if not self.directory.exists():
                return
            for pattern in patterns:
                for target in self.directory.glob(pattern):
                    with contextlib.suppress(FileNotFoundError):
                        target.unlink()
