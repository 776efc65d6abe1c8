"""The embedded activation index: an indexed table in the engine's relational store
(rows in :mod:`hindsight_core.store.activation`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hindsight_core.store import activation as rows
from hindsight_core.store.sql import RelationalStore


class SqliteActivationIndex:
    def __init__(self, store: RelationalStore) -> None:
        self._store = store

    def upsert(self, namespace: str, layer: str, items: Sequence[tuple[str, float]]) -> None:
        with self._store.transaction() as tx:
            rows.upsert(tx, namespace, layer, items)

    def delete(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> None:
        with self._store.transaction() as tx:
            rows.delete(tx, namespace, layer, memory_ids)

    def top(self, namespace: str, layer: str, n: int) -> list[tuple[str, float]]:
        return rows.top(self._store, namespace, layer, n)

    def scores(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> dict[str, float]:
        return rows.scores(self._store, namespace, layer, memory_ids)

    def count(self, namespace: str, layer: str) -> int:
        return rows.count(self._store, namespace, layer)

    def ids(self, namespace: str, layer: str) -> set[str]:
        return rows.ids(self._store, namespace, layer)

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        with self._store.transaction() as tx:
            rows.drop_namespace(tx, namespace, layers)

    def ping(self) -> bool:
        return True

    def close(self) -> None:
        """The store owns the connection."""
