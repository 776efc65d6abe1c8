"""The activation index interface. The key it sorts by is defined with the rest of the activation
model in :mod:`hindsight_core.activation.math` (re-exported here for the index implementations)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from hindsight_core.activation.math import KEY_EPOCH
from hindsight_core.activation.math import index_key as activation_key
from hindsight_core.activation.math import log_from_key as log_activation_from_key

__all__ = ["KEY_EPOCH", "ActivationIndex", "activation_key", "log_activation_from_key"]


@runtime_checkable
class ActivationIndex(Protocol):
    """One sorted set per (namespace, layer), member = memory id, score = activation key. Arguments
    follow the same order (namespace, then layer) as :class:`~hindsight_core.vectors.base.VectorIndex`."""

    def upsert(self, namespace: str, layer: str, items: Sequence[tuple[str, float]]) -> None: ...

    def delete(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> None: ...

    def top(self, namespace: str, layer: str, n: int) -> list[tuple[str, float]]:
        """The ``n`` highest keys, highest first."""
        ...

    def scores(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> dict[str, float]: ...

    def count(self, namespace: str, layer: str) -> int: ...

    def ids(self, namespace: str, layer: str) -> set[str]:
        """Every memory id held for ``namespace`` and ``layer`` (reconcile compares it with the store)."""
        ...

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None: ...

    def ping(self) -> bool: ...

    def close(self) -> None: ...
