"""The activation index interface and the key it sorts by.

``A(t) = A_ref · exp(-λ (t - t_ref))`` so ``ln A(t) = ln A_ref + λ t_ref - λ t``. The last term is the
same for every memory of a layer at a given ``t``; sorting by ``key = ln A_ref + λ t_ref`` therefore
equals sorting by ``A(now)`` at every ``now``. Keys change only when a memory is touched."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from hindsight_core.types import Activation

#: Key times are measured from this epoch (2020-01-01 UTC) to keep ``λ·t`` small and precise.
KEY_EPOCH = 1_577_836_800.0


def activation_key(activation: Activation, rate: float) -> float:
    return activation.log_base + rate * (activation.ref_time - KEY_EPOCH)


def log_activation_from_key(key: float, rate: float, now: float) -> float:
    """``ln A(now)`` back from a key."""
    return key - rate * (now - KEY_EPOCH)


@runtime_checkable
class ActivationIndex(Protocol):
    """One sorted set per (namespace, layer), member = memory id, score = activation key."""

    def upsert(self, namespace: str, layer: str, items: Sequence[tuple[str, float]]) -> None: ...

    def remove(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> None: ...

    def top(self, namespace: str, layer: str, n: int) -> list[tuple[str, float]]:
        """The ``n`` highest keys, highest first."""
        ...

    def scores(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> dict[str, float]: ...

    def count(self, namespace: str, layer: str) -> int: ...

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None: ...

    def ping(self) -> bool: ...

    def close(self) -> None: ...
