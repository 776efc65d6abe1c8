"""The vector index interface. Every query names a namespace: there is no unscoped search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np


class VectorHit(NamedTuple):
    memory_id: str
    similarity: float  # cosine, higher is closer


@runtime_checkable
class VectorIndex(Protocol):
    def upsert(
        self, layer: str, namespace: str, ids: Sequence[str], vectors: np.ndarray, kinds: Sequence[str]
    ) -> None: ...

    def delete(self, layer: str, ids: Sequence[str], *, namespace: str | None = None) -> None: ...

    def delete_namespace(self, layer: str, namespace: str) -> None: ...

    def query(
        self, layer: str, namespace: str, vector: np.ndarray, n: int, *, kinds: Sequence[str] | None = None
    ) -> list[VectorHit]: ...

    def count(self, layer: str, namespace: str | None = None) -> int: ...

    def ids(self, layer: str, namespace: str) -> set[str]: ...

    def close(self) -> None: ...
