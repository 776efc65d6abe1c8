"""Erasure: what ``forget`` and ``forget_namespace`` remove, inside the caller's transaction.

Forgetting is an erase, not a hide: the content, the vector and the id leave every table (embeddings,
edges, consolidation bookkeeping, recall logs, other memories' provenance). A distilled memory drawn
only from erased memories goes too, since its content restates theirs. What stays is a tombstone (id,
namespace, time) so index deletes still pending and writers racing the erase can tell an erased id from
an unknown one. The derived indexes drop the ids through the outbox, after commit, as for every write."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from hindsight_core.store.sql import RelationalStore, memory_ids_among
from hindsight_core.types import Layer

#: The JSON columns, per table, that may name memory ids (``recall_log`` stores what each recall saw).
_JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "recall_log": ("candidates", "injected", "scores", "idle"),
    "consolidation_jobs": ("report",),
}


def closure(
    tx: RelationalStore, namespace: str, ids: Iterable[str]
) -> tuple[list[tuple[str, str]], dict[str, list[str]]]:
    """The memories to erase — ``ids`` plus, recursively, every memory of the namespace whose sources are
    all erased — as ``(id, layer)``, and the new ``source_ids`` of the memories that keep other sources."""
    erased = set(ids)
    derived = {
        mid: json.loads(raw)
        for mid, raw in tx.query(
            "SELECT id, source_ids FROM memories WHERE namespace = ? AND layer != ? AND source_ids != '[]'",
            (namespace, Layer.EPISODIC.value),
        )
    }
    changed = True
    while changed:
        changed = False
        for mid, sources in derived.items():
            if mid not in erased and sources and all(s in erased for s in sources):
                erased.add(mid)
                changed = True
    rewritten = {
        mid: [s for s in sources if s not in erased]
        for mid, sources in derived.items()
        if mid not in erased and any(s in erased for s in sources)
    }
    layers: list[tuple[str, str]] = []
    chunked = sorted(erased)
    for start in range(0, len(chunked), 500):
        chunk = chunked[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        statement = f"SELECT id, layer FROM memories WHERE namespace = ? AND id IN ({marks})"
        layers += [(r[0], r[1]) for r in tx.query(statement, [namespace, *chunk])]
    return layers, rewritten


def erase(tx: RelationalStore, namespace: str, ids: Sequence[str], rewritten: dict[str, list[str]], now: float) -> None:
    """Delete every trace of ``ids`` (memories of ``namespace``) and leave their tombstones; the caller
    enqueues the index deletes. ``rewritten`` gives surviving memories their remaining sources."""
    tx.delete_memories(ids)
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ", ".join("?" * len(chunk))
        tx.execute(f"DELETE FROM consolidated_episodes WHERE memory_id IN ({marks})", chunk)
        tx.execute(f"DELETE FROM recall_injected WHERE memory_id IN ({marks})", chunk)
        tx.execute(f"DELETE FROM outbox WHERE memory_id IN ({marks})", chunk)
        # A memory superseded by an erased one stays superseded (history), without the erased id.
        tx.execute(f"UPDATE memories SET superseded_by = NULL WHERE superseded_by IN ({marks})", chunk)
    for mid, sources in rewritten.items():
        tx.execute("UPDATE memories SET source_ids = ? WHERE id = ?", (json.dumps(sources, ensure_ascii=False), mid))
    scrub_json_columns(tx, namespace, set(ids))
    tombstone(tx, namespace, ids, now)


#: Tables with a ``namespace`` column that ``purge_namespace`` leaves alone: the tombstones are what an
#: erase keeps on purpose.
_KEPT_ON_PURGE = frozenset({"erased_memories"})


def purge_namespace(tx: RelationalStore, namespace: str, now: float) -> list[str]:
    """Delete every row of ``namespace`` from every table that has a ``namespace`` column (found in the
    schema, so a new table is covered without being named here), the memory-keyed rows without one
    (edges, embeddings) with its memories, and leave a tombstone per erased memory. Call inside the
    ``forget_namespace`` transaction; the caller queues the index purges. Returns the erased ids."""
    ids = tx.ids_in(namespace)
    tx.delete_memories(ids)
    for table in tx.tables_with_column("namespace"):
        if table not in _KEPT_ON_PURGE:
            tx.execute(f"DELETE FROM {table} WHERE namespace = ?", (namespace,))
    tombstone(tx, namespace, ids, now)
    return ids


def subtree_namespaces(store: RelationalStore, root: str) -> list[str]:
    """The namespaces in ``root``'s subtree that ``purge_namespace`` would find rows of (every table with
    a ``namespace`` column but the tombstones), root first: what ``forget_namespace`` of a root erases."""
    tables = [t for t in store.tables_with_column("namespace") if t not in _KEPT_ON_PURGE]
    return store.namespaces_under(root, tables)


def tombstone(tx: RelationalStore, namespace: str, ids: Sequence[str], now: float) -> None:
    tx.executemany(
        "INSERT INTO erased_memories(memory_id, namespace, erased_at) VALUES (?, ?, ?) "
        "ON CONFLICT(memory_id) DO UPDATE SET erased_at = excluded.erased_at",
        [(mid, namespace, now) for mid in ids],
    )


def scrub_json_columns(tx: RelationalStore, namespace: str, ids: Collection[str]) -> None:
    """Rewrite the namespace's log rows that name an erased id without it. Rewriting (rather than
    deleting the rows) keeps the recall health figures of the memories that remain true; ids are ULIDs,
    so a quoted-id ``LIKE`` finds exactly the rows that hold one."""
    for table, columns in _JSON_COLUMNS.items():
        for mid in ids:
            pattern = f'%"{mid}"%'
            where = " OR ".join(f"{c} LIKE ?" for c in columns)
            rows = tx.query(
                f"SELECT id, {', '.join(columns)} FROM {table} WHERE namespace = ? AND ({where})",
                [namespace, *[pattern] * len(columns)],
            )
            for row in rows:
                parsed = {
                    c: None if v is None else without(json.loads(v), ids) for c, v in zip(columns, row[1:], strict=True)
                }
                values: list[Any] = [None if v is None else json.dumps(v, ensure_ascii=False) for v in parsed.values()]
                sets = [f"{c} = ?" for c in columns]
                if table == "recall_log":  # the counts the health figures sum follow the lists
                    sets += ["n_injected = ?", "n_idle = ?"]
                    values += [len(parsed["injected"] or []), len(parsed["idle"] or [])]
                tx.execute(f"UPDATE {table} SET {', '.join(sets)} WHERE id = ?", [*values, row[0]])


def without(value: Any, ids: Collection[str]) -> Any:
    """``value`` (parsed JSON) with every mention of ``ids`` removed: list items that are, or start with,
    an id (``[id, score]`` pairs) and dict entries keyed by one."""
    if isinstance(value, dict):
        return {k: without(v, ids) for k, v in value.items() if k not in ids}
    if isinstance(value, list):
        kept = []
        for item in value:
            if isinstance(item, str) and item in ids:
                continue
            if isinstance(item, list) and item and isinstance(item[0], str) and item[0] in ids:
                continue
            kept.append(without(item, ids))
        return kept
    return value


def erased_among(store: RelationalStore, ids: Iterable[str]) -> set[str]:
    """Which of ``ids`` have a tombstone (erased, possibly after the caller read them)."""
    return memory_ids_among(store, "erased_memories", ids)
