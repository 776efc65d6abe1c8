"""What ``hindsight worker`` processes need from the relational store: their heartbeats (progress that
every process sharing the data reads in ``stats()``) and the namespaces with work waiting.

A heartbeat is one ``engine_meta`` row per running worker (``worker:<owner>`` → JSON), rewritten after
every pass; a worker that stops deletes its row, one that was killed stops rewriting it and drops out of
``stats()`` once it is older than the worker said it would wait, and the next worker removes it."""

from __future__ import annotations

import json
from typing import Any

from hindsight_core.store.sql import RelationalStore

_PREFIX = "worker:"


def beat(store: RelationalStore, owner: str, status: dict[str, Any]) -> None:
    """Write ``owner``'s progress (``status`` must hold ``heartbeat_at`` and ``stale_after``)."""
    with store.transaction() as tx:
        tx.execute(
            "INSERT INTO engine_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (_PREFIX + owner, json.dumps(status, ensure_ascii=False)),
        )


def gone(store: RelationalStore, owner: str) -> None:
    """The worker stopped: it no longer counts as running."""
    with store.transaction() as tx:
        tx.execute("DELETE FROM engine_meta WHERE key = ?", (_PREFIX + owner,))


def live(store: RelationalStore, now: float, *, prune: bool = False) -> list[dict[str, Any]]:
    """Heartbeats younger than their ``stale_after``, oldest worker first; ``prune`` deletes the others
    (workers that were killed)."""
    found: list[dict[str, Any]] = []
    stale: list[str] = []
    for key, value in store.query("SELECT key, value FROM engine_meta WHERE key LIKE ?", (_PREFIX + "%",)):
        try:
            status = json.loads(value)
            fresh = float(status["heartbeat_at"]) + float(status["stale_after"]) >= now
        except (ValueError, KeyError, TypeError):
            fresh = False
        if fresh:
            found.append(status)
        else:
            stale.append(key)
    if prune and stale:
        with store.transaction() as tx:
            for key in stale:
                tx.execute("DELETE FROM engine_meta WHERE key = ?", (key,))
    return sorted(found, key=lambda s: (float(s.get("started_at", 0.0)), str(s.get("owner", ""))))


def consolidation_backlog(store: RelationalStore) -> list[tuple[str, int, float]]:
    """``(namespace, episodes not yet consolidated, when the oldest of them was recorded)`` for every
    namespace that has any: what a worker may consolidate."""
    rows = store.query(
        "SELECT m.namespace, COUNT(*), MIN(m.created_at) FROM memories m WHERE m.layer = 'episodic' "
        "AND m.status IN ('active', 'cold') AND NOT EXISTS (SELECT 1 FROM consolidated_episodes c "
        "WHERE c.memory_id = m.id) GROUP BY m.namespace ORDER BY MIN(m.created_at)"
    )
    return [(str(ns), int(count), float(oldest)) for ns, count, oldest in rows]
