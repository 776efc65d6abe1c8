"""What every part of the engine shares, built once per engine, and the one way to write.

:class:`EngineContext` holds the stores, the indexes, the embedder, the token counter, the clock, the
configuration and the outbox applier. The services (write, recall, lifecycle, transcripts, portability)
each get the same context; :class:`hindsight_core.Hindsight` builds it and composes them.

:meth:`EngineContext.changes` is the unit of work: the only way a memory, an edge or index work is
written. It opens one transaction of the relational store; what the caller inserts, updates or deletes
through it queues its outbox rows in that same transaction (so an acknowledged write always carries the
index work that makes it visible), and after the commit the applier brings the indexes in step. A
failure before the commit rolls back the rows and their index work together."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from hindsight_core.activation.base import ActivationIndex
from hindsight_core.clock import Clock, aware, to_ts
from hindsight_core.config import HindsightConfig
from hindsight_core.embeddings.base import Embedder
from hindsight_core.store.sql import RelationalStore
from hindsight_core.text.tokens import TokenCounter
from hindsight_core.types import Edge, Memory
from hindsight_core.vectors.base import VectorIndex
from hindsight_core.write.outbox import PURGE, SYNC, TARGETS, ApplyReport, OutboxApplier

#: An outbox row: ``(memory_id, namespace, layer, target, op)``; a purge names no memory and no layer.
OutboxRow = tuple[str | None, str, str | None, str, str]

#: What a unit of work applies after its commit: the memories it queued work for (``"written"``, the
#: normal write), every pending row (``"all"``: a purge, a repair), or nothing now (``"later"``: the
#: caller applies in batches of its own, e.g. with a progress bar).
ApplyMode = Literal["written", "all", "later"]


@dataclass
class EngineContext:
    path: Path
    config: HindsightConfig
    clock: Clock
    embedder: Embedder
    tokens: TokenCounter
    store: RelationalStore
    vectors: VectorIndex
    activation: ActivationIndex
    outbox: OutboxApplier

    def now(self) -> datetime:
        return aware(self.clock(), what="clock()")

    @contextmanager
    def changes(self, *, apply: ApplyMode = "written", force: bool = False) -> Iterator[Changes]:
        """One transaction plus its outbox rows, applied after the commit (see the module docstring).
        ``force`` applies even to a target in its outage cool-down (reconcile on demand). The report
        of the apply is ``changes.applied`` once the block has left."""
        with self.store.transaction() as tx:
            changes = Changes(tx, to_ts(self.now()))
            yield changes
            if changes.rows:  # claimed for this process when it applies them right after the commit
                claims = None if apply == "later" else self.outbox.claims(changes.ts, force=force)
                tx.enqueue(changes.rows, changes.ts, claims)
        if not changes.touched or apply == "later":
            return
        if apply == "all":
            changes.applied = self.outbox.apply(None, force=force)
        else:
            changes.applied = self.outbox.apply(list(dict.fromkeys(changes.synced)), force=force)


@dataclass
class Changes:
    """The open unit of work. ``tx`` is the transaction, for reads and for store operations that queue
    no index work (logs, transcripts, leases); memory writes go through the methods here."""

    tx: RelationalStore
    #: The transaction's time (unix seconds), stamped on its outbox rows.
    ts: float
    rows: list[OutboxRow] = field(default_factory=list)
    synced: list[str] = field(default_factory=list)
    touched: bool = False
    applied: ApplyReport = field(default_factory=ApplyReport)

    # -- memories ----------------------------------------------------------------------------------
    def insert(self, memories: Sequence[Memory], external_ids: Sequence[str | None] | None = None) -> None:
        """Insert new memories; the indexed ones are queued for both indexes."""
        if not memories:
            return
        self.tx.insert_memories(memories, external_ids)
        self.sync([m for m in memories if m.indexed])
        self.touched = True

    def update(self, memories: Iterable[Memory]) -> None:
        """Rewrite stored memories and queue both indexes, indexed or not: a memory leaving the index
        (cold, superseded, no longer indexed) must leave it."""
        memories = list(memories)
        for m in memories:
            self.tx.update_memory(m)
        self.sync(memories)

    def delete(self, memories: Iterable[Memory]) -> None:
        """Delete stored memories (archived away); the indexes drop them."""
        memories = list(memories)
        self.tx.delete_memories([m.id for m in memories])
        self.sync(memories)

    def add_edges(self, edges: Sequence[Edge]) -> None:
        if edges:
            self.tx.add_edges(edges)
            self.touched = True

    # -- index work --------------------------------------------------------------------------------
    def sync(self, memories: Iterable[Memory], targets: Sequence[str] = TARGETS) -> None:
        """Queue "bring these memories in step" for ``targets``."""
        self.sync_ids(((m.id, m.namespace, m.layer.value) for m in memories), targets)

    def sync_ids(self, items: Iterable[tuple[str, str, str]], targets: Sequence[str] = TARGETS) -> None:
        """The same by ``(memory_id, namespace, layer)``, for memories already gone from the store."""
        for memory_id, namespace, layer in items:
            self.rows += [(memory_id, namespace, layer, target, SYNC) for target in targets]
            self.synced.append(memory_id)
        self.touched = True

    def queue(self, rows: Iterable[OutboxRow]) -> None:
        """Queue ready-made outbox rows (an index repair that computed what is out of step)."""
        for row in rows:
            self.rows.append(row)
            if row[0] is not None:
                self.synced.append(row[0])
        self.touched = True

    def purge(self, namespace: str) -> None:
        """Queue dropping a whole namespace from both indexes."""
        self.rows += [(None, namespace, None, target, PURGE) for target in TARGETS]
        self.touched = True


__all__ = ["ApplyMode", "Changes", "EngineContext", "OutboxRow"]
