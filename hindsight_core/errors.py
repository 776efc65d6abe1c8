"""Exceptions. Input errors subclass ``ValueError`` so callers that already catch it keep working."""

from __future__ import annotations


class HindsightError(Exception):
    """Base of every error raised by the engine."""


class InvalidInputError(HindsightError, ValueError):
    """The caller passed something the engine will not store; nothing was changed."""


class UnknownNamespaceError(HindsightError, KeyError):
    """A namespace that holds no memories was named where one must exist."""

    def __str__(self) -> str:  # KeyError's repr-quoting hides the message
        return str(self.args[0]) if self.args else "unknown namespace"


class MemoryNotFoundError(HindsightError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "memory not found"


class MemoryArchivedError(MemoryNotFoundError):
    """The memory is no longer in the store: the sweep archived it. A demotion can be undone only until
    then; ``restore`` brings an archive back (fresh activation)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "memory archived"


class BackendUnavailableError(HindsightError):
    """A derived index (vector or activation) could not be reached; the write is kept in the outbox."""


class MissingExtraError(HindsightError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class ArchiveError(HindsightError):
    """An archive file could not be written or verified (a full disk, a permission, a bad file name); the
    memories it was meant to hold stay in the store."""


class EngineClosedError(HindsightError):
    """The engine (or its relational store) was closed; open a new ``Hindsight`` to continue."""


class EngineForkedError(HindsightError):
    """The engine was opened in another process and this one inherited it by ``fork`` (gunicorn
    ``--preload``, Celery prefork, ``multiprocessing`` with a module-level engine). Its connections,
    locks and threads belong to the parent: open one engine per process, after the fork."""


class DataDirectoryInUseError(HindsightError):
    """Another engine (in this or another process) owns the embedded data directory; nothing was opened.

    Embedded Chroma is single-process: the message says how to share memory between processes instead."""


class EmbedderMismatchError(HindsightError):
    """The data set's vectors came from another embedder (another name or dimension) than the one this
    engine was opened with; nothing was changed. Vectors of two models are not comparable, so recall
    would rank by noise: open the data with its own embedder, or move it to the new one with
    ``Hindsight(..., embedder=new, reembed=True)`` (the message names both)."""


class ForeignDataSetError(HindsightError):
    """The vector or activation index this engine was given holds another data set's entries: its marker
    names another data set. Two data sets under one index prefix would delete each other's entries
    (a reconcile removes what its own store does not hold), so nothing in the index was touched. The
    indexes the engine builds itself are named after the data set and never meet this; an index passed
    in (``vector_index=`` / ``activation_index=``) needs a prefix of its own per data set."""
