"""One process owns an embedded data directory.

Embedded Chroma (``PersistentClient``) keeps its HNSW index in process memory and writes it back on its
own schedule; two processes writing the same directory each persist their own view, and the index then
answers queries with ids its metadata does not know (``Error finding id``) while SQLite looks intact.
Nothing inside Chroma prevents this, so the engine takes an exclusive OS lock on ``<path>/.lock`` before
it creates anything that must not be shared, and holds it until :meth:`Hindsight.close`.

The lock is an advisory ``flock`` (``msvcrt.locking`` on Windows) on an open file descriptor: the kernel
drops it when the process exits, however it exits, so a SIGKILLed owner never leaves a stale lock. The
file itself is never deleted (deleting a lock file lets two processes lock two different inodes); it only
carries the owner's pid for the error message."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from hindsight_core.errors import DataDirectoryInUseError

LOCK_NAME = ".lock"
_PID_OFFSET = 16  # Windows locks byte 0 only, so the pid stays readable by the process that is refused


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _read_pid(fd: int) -> int | None:
    try:
        raw = os.pread(fd, 64, _PID_OFFSET) if hasattr(os, "pread") else b""
        return int(raw.split(b"\0")[0].strip() or b"x")
    except (OSError, ValueError):
        return None


def _message(directory: Path, pid: int | None) -> str:
    if pid is None:
        owner = "another process"
    elif pid == os.getpid():
        owner = f"another Hindsight engine in this process (pid {pid})"
    else:
        owner = f"process {pid}"
    return (
        f"data directory {str(directory)!r} is in use by {owner}: embedded Chroma is single-process, and a "
        "second writer corrupts its index. Share that engine within the process, or call .close() on it first "
        "(the lock is released on close and when its process exits). To share memory between processes, run "
        "a Chroma server and open every engine with chroma_url='http://host:8000' (and redis_url= for the "
        "activation index); the SQLite file can then be opened by several processes at once."
    )


class DirectoryLock:
    """An exclusive lock on a data directory, held from :meth:`acquire` until :meth:`release`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_NAME
        self._fd: int | None = None
        self._guard = threading.Lock()

    @classmethod
    def acquire(cls, directory: Path) -> DirectoryLock:
        """Lock ``directory`` or raise :class:`DataDirectoryInUseError` (having touched nothing but the
        lock file). Separate opens of the lock file conflict even within one process, so a second engine
        on the same directory in the same process is refused as well."""
        lock = cls(directory)
        fd = os.open(lock.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _try_lock(fd):
                raise DataDirectoryInUseError(_message(directory, _read_pid(fd)))
            record = f"{os.getpid()}\n".encode()
            os.ftruncate(fd, _PID_OFFSET)
            os.lseek(fd, _PID_OFFSET, os.SEEK_SET)
            os.write(fd, record)
        except BaseException:
            os.close(fd)
            raise
        lock._fd = fd
        return lock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Unlock (idempotent). The pid is cleared first, while the lock is still held, so the next owner
        never races with it."""
        with self._guard:
            fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):  # a full disk must not keep the directory locked
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor drops the flock / msvcrt lock


S = TypeVar("S")
P = ParamSpec("P")


def releases_on_failure(init: Callable[Concatenate[S, P], None]) -> Callable[Concatenate[S, P], None]:
    """Wrap an ``__init__`` that stores a :class:`DirectoryLock` as ``self._owner``: if it raises after
    taking the lock, the lock is released at once rather than whenever the half-built object is collected
    (which may be never, while a traceback holds it)."""

    @functools.wraps(init)
    def wrapper(self: S, *args: P.args, **kwargs: P.kwargs) -> None:
        try:
            init(self, *args, **kwargs)
        except BaseException:
            owner = getattr(self, "_owner", None)
            if isinstance(owner, DirectoryLock):
                owner.release()
            raise

    return wrapper
