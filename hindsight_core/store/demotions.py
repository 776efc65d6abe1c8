"""Demotions (table ``memory_demotions``): a memory someone decided is no longer needed, with who, when
and why, and the activation and status it had before, so ``reinstate`` can give them back until the
sweep archives it. One row per demotion; ``reinstated_at`` is set when it is undone, so the history
keeps both events. The ``namespace`` column puts the rows under ``forget_namespace``'s generic purge;
``forget`` and an archive delete drop a memory's rows with it (``RelationalStore.delete_memories``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hindsight_core.store.sql import RelationalStore, memory_ids_among

_COLUMNS = "seq, memory_id, demoted_at, demoted_by, reason, log_base_before, ref_time_before, status_before, " \
    "reinstated_at"


@dataclass(frozen=True)
class Demotion:
    seq: int
    memory_id: str
    demoted_at: float
    demoted_by: str | None
    reason: str | None
    log_base_before: float
    ref_time_before: float
    status_before: str
    reinstated_at: float | None

    @property
    def in_force(self) -> bool:
        return self.reinstated_at is None


def _demotion(r: tuple[object, ...]) -> Demotion:
    seq, mid, at, by, reason, log_base, ref_time, status, reinstated = r
    return Demotion(
        seq=int(seq),  # type: ignore[call-overload]
        memory_id=str(mid),
        demoted_at=float(at),  # type: ignore[arg-type]
        demoted_by=None if by is None else str(by),
        reason=None if reason is None else str(reason),
        log_base_before=float(log_base),  # type: ignore[arg-type]
        ref_time_before=float(ref_time),  # type: ignore[arg-type]
        status_before=str(status),
        reinstated_at=None if reinstated is None else float(reinstated),  # type: ignore[arg-type]
    )


def add(
    tx: RelationalStore, memory_id: str, namespace: str, *, at: float, by: str | None, reason: str | None,
    log_base_before: float, ref_time_before: float, status_before: str, reinstated_at: float | None = None,
) -> None:
    """Note a demotion; call inside the transaction that lowers the memory's activation (or, with
    ``reinstated_at``, that imports one already undone)."""
    tx.execute(
        "INSERT INTO memory_demotions(memory_id, namespace, demoted_at, demoted_by, reason, log_base_before, "
        "ref_time_before, status_before, reinstated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (memory_id, namespace, at, by, reason, log_base_before, ref_time_before, status_before, reinstated_at),
    )


def in_force(store: RelationalStore, memory_id: str) -> Demotion | None:
    """The memory's demotion not yet undone, if any."""
    rows = store.query(
        f"SELECT {_COLUMNS} FROM memory_demotions WHERE memory_id = ? AND reinstated_at IS NULL "
        "ORDER BY seq DESC LIMIT 1",
        (memory_id,),
    )
    return _demotion(rows[0]) if rows else None


def reinstated(tx: RelationalStore, seq: int, at: float) -> None:
    """Mark a demotion undone; call inside the transaction that restores the memory."""
    tx.execute("UPDATE memory_demotions SET reinstated_at = ? WHERE seq = ?", (at, seq))


def of_memory(store: RelationalStore, memory_id: str) -> list[Demotion]:
    """Every demotion of the memory, oldest first."""
    rows = store.query(f"SELECT {_COLUMNS} FROM memory_demotions WHERE memory_id = ? ORDER BY seq", (memory_id,))
    return [_demotion(r) for r in rows]


def of_namespace(store: RelationalStore, namespace: str) -> list[Demotion]:
    """Every demotion in the namespace, in order (export)."""
    rows = store.query(f"SELECT {_COLUMNS} FROM memory_demotions WHERE namespace = ? ORDER BY seq", (namespace,))
    return [_demotion(r) for r in rows]


def demoted_among(store: RelationalStore, ids: Iterable[str]) -> set[str]:
    """Which of ``ids`` are demoted now (recall does not reinforce them: being shown is not being wanted)."""
    return memory_ids_among(store, "memory_demotions", ids, where="reinstated_at IS NULL")
