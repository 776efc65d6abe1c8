"""The embedded activation index: an indexed table in the engine's SQLite file."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hindsight_core.store.sql import RelationalStore


class SqliteActivationIndex:
    def __init__(self, store: RelationalStore) -> None:
        self._store = store

    def upsert(self, namespace: str, layer: str, items: Sequence[tuple[str, float]]) -> None:
        with self._store.transaction() as tx:
            for memory_id, score in items:
                tx.execute(
                    "INSERT INTO activation_index(namespace, layer, memory_id, score) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(namespace, layer, memory_id) DO UPDATE SET score = excluded.score",
                    (namespace, layer, memory_id, score),
                )

    def remove(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> None:
        with self._store.transaction() as tx:
            for memory_id in memory_ids:
                tx.execute(
                    "DELETE FROM activation_index WHERE namespace = ? AND layer = ? AND memory_id = ?",
                    (namespace, layer, memory_id),
                )

    def top(self, namespace: str, layer: str, n: int) -> list[tuple[str, float]]:
        rows = self._store.query(
            "SELECT memory_id, score FROM activation_index WHERE namespace = ? AND layer = ? "
            "ORDER BY score DESC, memory_id DESC LIMIT ?",
            (namespace, layer, int(n)),
        )
        return [(r[0], float(r[1])) for r in rows]

    def scores(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> dict[str, float]:
        found: dict[str, float] = {}
        ids = list(memory_ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for mid, score in self._store.query(
                "SELECT memory_id, score FROM activation_index WHERE namespace = ? AND layer = ? "
                f"AND memory_id IN ({marks})",
                [namespace, layer, *chunk],
            ):
                found[mid] = float(score)
        return found

    def count(self, namespace: str, layer: str) -> int:
        return int(
            self._store.query(
                "SELECT COUNT(*) FROM activation_index WHERE namespace = ? AND layer = ?", (namespace, layer)
            )[0][0]
        )

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        with self._store.transaction() as tx:
            for layer in layers:
                tx.execute("DELETE FROM activation_index WHERE namespace = ? AND layer = ?", (namespace, layer))

    def ping(self) -> bool:
        return True

    def close(self) -> None:
        """The store owns the connection."""
