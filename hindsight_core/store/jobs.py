"""Consolidation bookkeeping: jobs (table ``consolidation_jobs``: pending → running → done | failed) and
the episodes already distilled (table ``consolidated_episodes``), so a run never distils one twice."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Layer, Memory, Status

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
STATUSES = (PENDING, RUNNING, DONE, FAILED)


def create(
    store: RelationalStore,
    namespace: str,
    session_id: str | None,
    trigger: str,
    now: float,
    status: str = RUNNING,
    owner: str | None = None,
) -> int:
    """A new job row; ``owner`` is the lease owner running it (see :func:`abandon`)."""
    with store.transaction() as tx:
        rows = tx.query(
            "INSERT INTO consolidation_jobs(namespace, session_id, trigger, status, attempts, created_at, "
            "updated_at, owner) VALUES (?, ?, ?, ?, 1, ?, ?, ?) RETURNING id",
            (namespace, session_id, trigger, status, now, now, owner),
        )
        return int(rows[0][0])


def finish(
    store: RelationalStore,
    job_id: int,
    status: str,
    now: float,
    *,
    episodes: int,
    error: str | None = None,
    report: dict[str, Any] | None = None,
) -> None:
    with store.transaction() as tx:
        tx.execute(
            "UPDATE consolidation_jobs SET status = ?, episodes = ?, last_error = ?, report = ?, "
            "updated_at = ? WHERE id = ?",
            (
                status,
                episodes,
                error,
                json.dumps(report, ensure_ascii=False) if report else None,
                now,
                job_id,
            ),
        )


def abandon(store: RelationalStore, namespace: str, lease: str, now: float) -> int:
    """Mark failed the namespace's ``running`` jobs whose owner no longer holds the lease (its process
    died, or it lost the lease): a job is only running while its owner renews the lease. What such a
    job had not committed stays unconsolidated, so the next run takes it over. Returns how many."""
    with store.transaction() as tx:
        cursor = tx.execute(
            "UPDATE consolidation_jobs SET status = ?, last_error = ?, updated_at = ? "
            "WHERE namespace = ? AND status = ? AND NOT EXISTS (SELECT 1 FROM leases WHERE leases.name = ? "
            "AND leases.owner = consolidation_jobs.owner AND leases.expires_at >= ?)",
            (FAILED, "abandoned: its process stopped renewing the consolidation lease", now, namespace, RUNNING,
             lease, now),
        )
        return int(cursor.rowcount or 0)


def counts(store: RelationalStore, namespace: str) -> dict[str, int]:
    found = dict.fromkeys(STATUSES, 0)
    for status, count in store.query(
        "SELECT status, COUNT(*) FROM consolidation_jobs WHERE namespace = ? GROUP BY status", (namespace,)
    ):
        found[status] = int(count)
    return found


def get(store: RelationalStore, job_id: int) -> dict[str, Any] | None:
    rows = store.query(
        "SELECT id, namespace, session_id, trigger, status, attempts, episodes, last_error "
        "FROM consolidation_jobs WHERE id = ?",
        (job_id,),
    )
    if not rows:
        return None
    keys = ("id", "namespace", "session_id", "trigger", "status", "attempts", "episodes", "last_error")
    return dict(zip(keys, rows[0], strict=True))


def mark_consolidated(tx: RelationalStore, namespace: str, memory_ids: Sequence[str], job_id: int | None,
                      now: float) -> None:
    """Record episodes as distilled by ``job_id`` (inside the transaction that writes what they became);
    an episode already marked keeps its first job."""
    tx.executemany(
        "INSERT INTO consolidated_episodes(memory_id, namespace, job_id, consolidated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(memory_id) DO NOTHING",
        [(mid, namespace, job_id, now) for mid in memory_ids],
    )


def unconsolidated(store: RelationalStore, namespace: str, session_id: str | None) -> list[Memory]:
    """The namespace's active or cold episodes (of one session, when given) not yet distilled, in the
    order they happened."""
    where = (
        "namespace = ? AND layer = ? AND status IN (?, ?) AND id NOT IN "
        "(SELECT memory_id FROM consolidated_episodes WHERE namespace = ?)"
    )
    params: list[Any] = [namespace, Layer.EPISODIC.value, Status.ACTIVE.value, Status.COLD.value, namespace]
    if session_id is not None:
        where += " AND session_id = ?"
        params.append(session_id)
    return store.select(where, params, order="occurred_at, seq")
