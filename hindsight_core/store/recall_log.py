"""Recall log rows (tables ``recall_log``, ``recall_injected``): what each recall saw and injected, and
which memories were ever injected — the health figures of ``stats()``. The buffering lives in
``hindsight_core/recall/log.py``; this module writes and aggregates the rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from hindsight_core.store.sql import RelationalStore


class LoggedRecall(Protocol):
    """What one recall leaves in the log (``recall.log.LogEntry`` has this shape)."""

    namespace: str
    session_id: str | None
    query: str
    at: float
    candidates: dict[str, list[list[object]]]
    injected: list[str]
    scores: dict[str, float]
    idle: list[str]


class HealthCounts(NamedTuple):
    queries: int
    hits: int  # queries that injected something
    injected: int
    idle: int
    live: int  # active indexed memories of the namespace
    used: int  # of which ever injected


def append(tx: RelationalStore, entries: Sequence[LoggedRecall]) -> None:
    """Log rows of a batch, inside the caller's transaction. A namespace forgotten while the batch waited
    gets no rows back, nor does an erased memory an ``recall_injected`` row."""
    tx.executemany(
        "INSERT INTO recall_log(namespace, session_id, query, at, candidates, injected, scores, idle, "
        "n_injected, n_idle) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
        "WHERE EXISTS (SELECT 1 FROM memories WHERE namespace = ?)",
        [
            (e.namespace, e.session_id, e.query, e.at, json.dumps(e.candidates, ensure_ascii=False),
             json.dumps(e.injected), json.dumps(e.scores), json.dumps(e.idle), len(e.injected), len(e.idle),
             e.namespace)
            for e in entries
        ],
    )
    tx.executemany(
        "INSERT INTO recall_injected(namespace, memory_id, first_at) SELECT ?, ?, ? "
        "WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?) ON CONFLICT DO NOTHING",
        [(e.namespace, mid, e.at, mid) for e in entries for mid in e.injected],
    )


def health(store: RelationalStore, namespace: str) -> HealthCounts:
    queries, hits, injected, idle = store.query(
        "SELECT COUNT(*), SUM(CASE WHEN n_injected > 0 THEN 1 ELSE 0 END), SUM(n_injected), SUM(n_idle) "
        "FROM recall_log WHERE namespace = ?",
        (namespace,),
    )[0]
    live, used = store.query(
        "SELECT COUNT(*), COUNT(r.memory_id) FROM memories m LEFT JOIN recall_injected r "
        "ON r.namespace = m.namespace AND r.memory_id = m.id "
        "WHERE m.namespace = ? AND m.status = 'active' AND m.indexed = 1",
        (namespace,),
    )[0]
    return HealthCounts(int(queries or 0), int(hits or 0), int(injected or 0), int(idle or 0), int(live or 0),
                        int(used or 0))
