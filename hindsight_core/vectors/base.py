"""The vector index interface. Every query names a namespace: there is no unscoped search.

Arguments follow the activation index's order (namespace, then layer) so the two index protocols read
alike; both are ``str``, so callers that could swap them pass them by keyword."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np


class VectorHit(NamedTuple):
    memory_id: str
    similarity: float  # cosine, higher is closer


@runtime_checkable
class VectorIndex(Protocol):
    def upsert(
        self, namespace: str, layer: str, ids: Sequence[str], vectors: np.ndarray, kinds: Sequence[str]
    ) -> None: ...

    def delete(self, namespace: str, layer: str, ids: Sequence[str]) -> None: ...

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        """Forget every entry of ``namespace`` in each of ``layers``."""
        ...

    def query(
        self, namespace: str, layer: str, vector: np.ndarray, n: int, *, kinds: Sequence[str] | None = None
    ) -> list[VectorHit]: ...

    def count(self, namespace: str, layer: str) -> int: ...

    def ids(self, namespace: str, layer: str) -> set[str]:
        """Every memory id held for ``namespace`` and ``layer`` (reconcile compares it with the store)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class SharesCollections(Protocol):
    """A vector index that keeps a namespace's few entries of a layer in a collection shared with other
    namespaces (Chroma's pools), where a query filters by namespace. Chroma answers such a filter by
    reading the metadata of every entry it stores with that key, whichever collection holds it: 35-50 ms
    a query with 100k memories stored, against 2 ms for a namespace's own collection of 100k. So recall
    scans its snapshot's rows of a :meth:`shared` layer (fewer than a collection of its own needs)."""

    def shared(self, namespace: str, layer: str) -> bool:
        """Whether the namespace's entries of ``layer`` are in a shared collection."""
        ...


@runtime_checkable
class LoadsInBackground(Protocol):
    """A vector index whose first query of a collection also loads it (Chroma's HNSW graph, seconds at
    100k memories): recall scans its snapshot until :meth:`loaded`, and asks for :meth:`load`."""

    def loaded(self, namespace: str, layer: str) -> bool: ...

    def load(self, namespace: str, layers: Sequence[str], vector: np.ndarray) -> None:
        """Load these collections in the background, querying each with ``vector``."""
        ...

    def wait_loaded(self) -> None: ...
