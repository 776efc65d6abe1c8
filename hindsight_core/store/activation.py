"""Activation index rows (table ``activation_index``): the embedded activation index, one score per
(namespace, layer, memory). ``hindsight_core/activation/sqlite.py`` serves the index protocol on them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hindsight_core.store.sql import RelationalStore


def upsert(tx: RelationalStore, namespace: str, layer: str, items: Sequence[tuple[str, float]]) -> None:
    tx.executemany(
        "INSERT INTO activation_index(namespace, layer, memory_id, score) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(namespace, layer, memory_id) DO UPDATE SET score = excluded.score",
        [(namespace, layer, memory_id, score) for memory_id, score in items],
    )


def delete(tx: RelationalStore, namespace: str, layer: str, memory_ids: Sequence[str]) -> None:
    tx.executemany(
        "DELETE FROM activation_index WHERE namespace = ? AND layer = ? AND memory_id = ?",
        [(namespace, layer, memory_id) for memory_id in memory_ids],
    )


def top(store: RelationalStore, namespace: str, layer: str, n: int) -> list[tuple[str, float]]:
    """The ``n`` highest scores, ties broken by the newer id (ULIDs sort by time)."""
    rows = store.query(
        "SELECT memory_id, score FROM activation_index WHERE namespace = ? AND layer = ? "
        "ORDER BY score DESC, memory_id DESC LIMIT ?",
        (namespace, layer, int(n)),
    )
    return [(r[0], float(r[1])) for r in rows]


def scores(store: RelationalStore, namespace: str, layer: str, memory_ids: Sequence[str]) -> dict[str, float]:
    found: dict[str, float] = {}
    ids = list(memory_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for mid, score in store.query(
            "SELECT memory_id, score FROM activation_index WHERE namespace = ? AND layer = ? "
            f"AND memory_id IN ({marks})",
            [namespace, layer, *chunk],
        ):
            found[mid] = float(score)
    return found


def count(store: RelationalStore, namespace: str, layer: str) -> int:
    rows = store.query("SELECT COUNT(*) FROM activation_index WHERE namespace = ? AND layer = ?", (namespace, layer))
    return int(rows[0][0])


def ids(store: RelationalStore, namespace: str, layer: str) -> set[str]:
    rows = store.query("SELECT memory_id FROM activation_index WHERE namespace = ? AND layer = ?", (namespace, layer))
    return {r[0] for r in rows}


def drop_namespace(tx: RelationalStore, namespace: str, layers: Iterable[str]) -> None:
    tx.executemany(
        "DELETE FROM activation_index WHERE namespace = ? AND layer = ?", [(namespace, layer) for layer in layers]
    )
