"""Stage 10: the recall log and buffered reinforcement.

Both are buffered in memory and written in one transaction per batch: a recall must not pay for an
fsync, and reinforcing each hit in its own round trip would make the read path a write path. The
buffer is flushed when it is full, when its oldest entry is older than the configured age, when
stats are read, and on close."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from hindsight_core.activation.math import reinforced
from hindsight_core.config import HindsightConfig
from hindsight_core.context import Changes
from hindsight_core.store import demotions, recall_log
from hindsight_core.store.erase import erased_among
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Activation, Layer, NamespaceStats
from hindsight_core.write.outbox import ACTIVATION


@dataclass
class LogEntry:
    namespace: str
    session_id: str | None
    query: str
    at: float
    candidates: dict[str, list[list[object]]]
    injected: list[str]
    scores: dict[str, float]
    idle: list[str]


@dataclass
class _Pending:
    logs: list[LogEntry] = field(default_factory=list)
    #: memory id → (summed relevance, number of injections)
    boosts: dict[str, tuple[float, int]] = field(default_factory=dict)
    since: float | None = None


class RecallRecorder:
    def __init__(
        self,
        changes: Callable[[], AbstractContextManager[Changes]],
        config: HindsightConfig,
        now: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``changes`` opens the engine's unit of work (:meth:`EngineContext.changes`): log rows and
        reinforcements are one transaction, and the new activation keys are applied after it."""
        self._changes = changes
        self._config = config
        self._now = now
        self._monotonic = monotonic
        self._pending = _Pending()
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()

    def add(self, entry: LogEntry | None, boosts: dict[str, float]) -> bool:
        """Buffer one recall; returns whether a flush is due (the caller decides where it runs)."""
        with self._lock:
            if entry is not None:
                self._pending.logs.append(entry)
            for memory_id, relevance in boosts.items():
                total, count = self._pending.boosts.get(memory_id, (0.0, 0))
                self._pending.boosts[memory_id] = (total + relevance, count + 1)
            if self._pending.since is None:
                self._pending.since = self._monotonic()
            cfg = self._config.recall
            return (
                len(self._pending.logs) >= cfg.reinforce_batch
                or len(self._pending.boosts) >= cfg.reinforce_batch * 16
                or self._monotonic() - self._pending.since >= cfg.reinforce_max_age_s
            )

    def pending(self) -> int:
        with self._lock:
            return len(self._pending.boosts) + len(self._pending.logs)

    def drop_namespace(self, namespace: str) -> None:
        with self._lock:
            self._pending.logs = [e for e in self._pending.logs if e.namespace != namespace]

    def drop_memories(self, ids: Sequence[str]) -> None:
        """Scrub erased memories from the buffered log entries and reinforcements (``forget``)."""
        gone = set(ids)
        with self._lock:
            self._pending.logs = [_without(e, gone) for e in self._pending.logs]
            for mid in gone:
                self._pending.boosts.pop(mid, None)

    def flush(self) -> int:
        """Write the buffered log rows and reinforcements in one transaction; returns memories reinforced."""
        with self._flush_lock:
            with self._lock:
                batch, self._pending = self._pending, _Pending()
            if not batch.logs and not batch.boosts:
                return 0
            try:
                touched = self._write(batch)  # the unit of work applies the activation keys after commit
            except Exception:
                self._restore(batch)
                raise
            return len(touched)

    def _restore(self, batch: _Pending) -> None:
        """A failed flush puts its batch back in front of what arrived meanwhile."""
        with self._lock:
            self._pending.logs = batch.logs + self._pending.logs
            for memory_id, (total, count) in batch.boosts.items():
                more, n = self._pending.boosts.get(memory_id, (0.0, 0))
                self._pending.boosts[memory_id] = (total + more, count + n)
            self._pending.since = batch.since

    def _write(self, batch: _Pending) -> list[str]:
        now = self._now()
        cfg = self._config.activation
        synced: list[tuple[str, str, str]] = []
        with self._changes() as ch:
            if batch.logs:
                # A recall that ran while its memories were being erased must not log their ids.
                mentioned = [mid for e in batch.logs for mid in _mentions(e)]
                gone = erased_among(ch.tx, mentioned) if mentioned else set()
                if gone:
                    batch.logs = [_without(e, gone) for e in batch.logs]
                recall_log.append(ch.tx, batch.logs)
            if batch.boosts:
                # a demoted memory someone said is no longer needed: being shown does not bring it back
                held_down = demotions.demoted_among(ch.tx, batch.boosts)
                ids = [mid for mid in batch.boosts if mid not in held_down]
                rows: list[tuple[float, float, int, str]] = []
                for mid, namespace, layer, log_base, ref_time in ch.tx.activations(ids):
                    relevance, count = batch.boosts[mid]
                    boosted = reinforced(
                        Activation(log_base=log_base, ref_time=ref_time), cfg.rate(Layer(layer)), now,
                        cfg.reinforce_weight * relevance,
                    )
                    rows.append((boosted.log_base, now, count, mid))
                    synced.append((mid, namespace, layer))
                ch.tx.reinforce(rows)
                ch.sync_ids(synced, (ACTIVATION,))
        return [mid for mid, _, _ in synced]


def health(store: RelationalStore, namespace: str, stats: NamespaceStats) -> None:
    """Hit rate (queries that injected something), idle rate (share of recalled memories the budget
    dropped) and coverage (share of the namespace's live memories ever injected)."""
    counts = recall_log.health(store, namespace)
    if counts.queries:
        stats.recall_hit_rate = counts.hits / counts.queries
        recalled = counts.injected + counts.idle
        stats.recall_idle_rate = counts.idle / recalled if recalled else 0.0
        stats.recall_coverage = counts.used / counts.live if counts.live else 0.0


def _mentions(entry: LogEntry) -> set[str]:
    ids = {str(c[0]) for ranked in entry.candidates.values() for c in ranked if c}
    return ids | set(entry.injected) | set(entry.scores) | set(entry.idle)


def _without(entry: LogEntry, gone: set[str]) -> LogEntry:
    if not gone & _mentions(entry):
        return entry
    return LogEntry(
        namespace=entry.namespace, session_id=entry.session_id, query=entry.query, at=entry.at,
        candidates={
            name: [c for c in ranked if not c or c[0] not in gone] for name, ranked in entry.candidates.items()
        },
        injected=[m for m in entry.injected if m not in gone],
        scores={m: v for m, v in entry.scores.items() if m not in gone},
        idle=[m for m in entry.idle if m not in gone],
    )
