"""Applies outbox rows to the derived indexes (vectors, activation), idempotently.

An outbox row only says "bring memory X in target T in step with the relational store"; the desired
state is read from the store at apply time. Applying a row twice, or after a newer change, is therefore
harmless: Chroma upserts by id, sorted sets by member. A target that fails is left alone for a short
cool-down (so an outage does not slow every write) and its backlog is drained when it answers again.

A failure that is not the target being unreachable is a row's own: the batch is retried memory by
memory so the others apply, and only the failing row is charged an attempt; after
``config.write.outbox_max_attempts`` it is parked (kept with its error, skipped by drains, shown in
``stats()``) so one bad row can never hold the queue.

Rows are claimed before they are applied (``RelationalStore.claim``): the applier's owner id and a
deadline ``config.write.outbox_claim_s`` ahead go on the row, so processes sharing a store never apply
the same row at once. A stale apply can then not land after a fresh one: newer work coalesced into a
claimed row waits for the holder, whose settle sees the new version, keeps the row and releases it for
the next apply. A write claims its own rows in its transaction (no extra write on the fast path);
drains claim batches with one conditional UPDATE; a claim whose applier died is taken over once it
expires, and an applier that finds a target unreachable releases its claims at once."""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hindsight_core.activation.base import ActivationIndex, activation_key
from hindsight_core.config import HindsightConfig
from hindsight_core.embeddings.base import Embedder
from hindsight_core.errors import BackendUnavailableError
from hindsight_core.store.sql import OutboxItem, RelationalStore
from hindsight_core.types import PERSISTENT_LAYERS, Layer, Memory, Status
from hindsight_core.vectors.base import VectorIndex

log = logging.getLogger("hindsight.outbox")

VECTOR = "vector"
ACTIVATION = "activation"
TARGETS = (VECTOR, ACTIVATION)
SYNC = "sync"
PURGE = "purge"


def in_index(m: Memory | None) -> bool:
    """Whether a memory belongs in the derived indexes at all."""
    return m is not None and m.indexed and m.status == Status.ACTIVE and m.layer in PERSISTENT_LAYERS


def unreachable(exc: BaseException) -> bool:
    """Whether a failure means the target cannot be reached (no row is at fault) rather than one row
    failing while the target works."""
    return isinstance(exc, BackendUnavailableError | ConnectionError | TimeoutError | OSError)


@dataclass
class ApplyReport:
    applied: int = 0
    failed: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    #: Rows parked by this call (failed on their own ``outbox_max_attempts`` times).
    parked: int = 0
    #: Applied rows that stayed pending: newer work was coalesced into them meanwhile.
    kept: int = 0


class OutboxApplier:
    def __init__(
        self,
        store: RelationalStore,
        vectors: VectorIndex,
        activation: ActivationIndex,
        embedder: Embedder,
        config: HindsightConfig,
        *,
        cooldown_s: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
        owner: str | None = None,
    ) -> None:
        from hindsight_core.store.leases import new_owner

        #: Who this applier's claims name (one per engine: two engines of a process are two appliers).
        self.owner = owner or new_owner()
        #: Unix seconds of the engine clock, the time claims are stamped with.
        self._now = now
        self._store = store
        self._vectors = vectors
        self._activation = activation
        self._embedder = embedder
        self._config = config
        self._cooldown = cooldown_s
        self._monotonic = monotonic
        self._retry_at: dict[str, float] = {}
        self._backlog: dict[str, bool] = {t: True for t in TARGETS}  # unknown at open: check once
        self._lock = threading.Lock()
        #: Targets whose last attempt found them unreachable.
        self._down: set[str] = set()
        #: Called (outside the lock) with a target that answers again after an outage: the engine checks
        #: whether it came back empty.
        self.on_recovered: Callable[[str], None] | None = None
        #: Called after every ``apply`` (the engine checks whether an index lost its data meanwhile).
        self.on_applied: Callable[[], None] | None = None

    def claims(self, now: float, *, force: bool = False) -> dict[str, tuple[str, float]]:
        """What a write's ``enqueue`` stamps on its rows: a claim on each target it will apply to right
        after the commit (a target in its outage cool-down is left unclaimed, for whoever reaches it)."""
        until = now + self._config.write.outbox_claim_s
        return {t: (self.owner, until) for t in TARGETS
                if force or self._monotonic() >= self._retry_at.get(t, 0.0)}

    def release_claims(self) -> None:
        """Give up every claim this applier holds (the engine closes), so no row waits for it to expire."""
        with self._lock:
            self._store.release_claims(self.owner)

    def apply(self, memory_ids: Sequence[str] | None = None, *, force: bool = False) -> ApplyReport:
        """Apply pending rows for ``memory_ids`` (all rows when ``None``), plus any backlog of a target
        that is answering again. ``force`` ignores the cool-down (reconcile on demand)."""
        report = ApplyReport()
        recovered: list[str] = []
        with self._lock:
            for target in TARGETS:
                if not force and self._monotonic() < self._retry_at.get(target, 0.0):
                    continue
                drain = memory_ids is None or self._backlog[target]
                rows: list[OutboxItem] = []
                after = 0
                charged, kept = report.failed, report.kept
                try:
                    while True:
                        now = self._now()
                        until = now + self._config.write.outbox_claim_s
                        if drain:
                            rows, cursor = self._store.claim(self.owner, now, until, target=target, after=after)
                        else:
                            rows, cursor = self._store.claim(
                                self.owner, now, until, target=target, memory_ids=memory_ids)
                        if cursor is None:
                            break
                        if rows:
                            self._apply_rows(target, rows, report)
                        after = cursor
                        if not drain:
                            break
                    # rows charged but not parked are retried by the next call, not left for reconcile
                    self._backlog[target] = report.failed > charged or report.kept > kept
                    self._retry_at.pop(target, None)
                    if target in self._down:
                        self._down.discard(target)
                        recovered.append(target)
                except Exception as exc:  # the target is unreachable: keep the rows, try again later
                    self._backlog[target] = True
                    self._down.add(target)
                    self._retry_at[target] = self._monotonic() + self._cooldown
                    error = f"{type(exc).__name__}: {exc}"
                    self._store.note_error([i.id for i in rows], error, self.owner)
                    report.failed += len(rows)
                    report.errors[target] = error
                    log.warning("%s index unavailable; %d writes kept in the outbox: %s", target, len(rows), error)
        if self.on_recovered is not None:
            for target in recovered:
                self.on_recovered(target)
        if self.on_applied is not None:
            self.on_applied()
        return report

    def _apply_rows(self, target: str, rows: list[OutboxItem], report: ApplyReport) -> None:
        """Apply one batch; raises only when the target is unreachable. Any other failure is isolated
        to the memories that cause it."""
        try:
            self._apply_target(target, rows)
        except Exception as exc:
            if unreachable(exc):
                raise
            log.info("%s index refused a batch of %d rows (%s); retrying them one by one", target, len(rows), exc)
            self._isolate(target, rows, report)
            return
        report.kept += self._store.settle(rows, self.owner)
        report.applied += len(rows)

    def _isolate(self, target: str, rows: list[OutboxItem], report: ApplyReport) -> None:
        """Retry ``rows`` per memory (a purge on its own): the good ones apply, a failing one is charged.
        When nothing applies, no row is singled out: that is the target (or the embedder) failing, and it
        is handled like an outage. A row that is bad on its own is charged on a drain that also applies
        other work."""
        groups: dict[object, list[OutboxItem]] = defaultdict(list)
        for item in rows:
            groups[item.memory_id if item.op == SYNC and item.memory_id else ("purge", item.id)].append(item)
        failures: list[tuple[list[OutboxItem], Exception]] = []
        for group in groups.values():
            try:
                self._apply_target(target, group)
            except Exception as exc:
                if unreachable(exc):
                    raise
                failures.append((group, exc))
                continue
            report.kept += self._store.settle(group, self.owner)
            report.applied += len(group)
        if failures and len(failures) == len(groups):
            raise failures[0][1]  # nothing applies: the target (or the embedder) is failing, not a row
        limit = self._config.write.outbox_max_attempts
        for group, cause in failures:
            error = f"{type(cause).__name__}: {cause}"
            parked = self._store.charge(group, error, limit)
            report.failed += len(group)
            report.parked += parked
            report.errors[target] = error
            if parked:
                log.warning("%s index: parked outbox work for %s after %d attempts: %s",
                            target, group[0].memory_id or group[0].namespace, limit, error)

    # -- per target ------------------------------------------------------------------------------
    def _apply_target(self, target: str, items: list[OutboxItem]) -> None:
        purges = [i for i in items if i.op == PURGE]
        for item in purges:
            self._purge(target, item.namespace)
        syncs = [i for i in items if i.op == SYNC and i.memory_id]
        memories = self._store.get_many(i.memory_id for i in syncs if i.memory_id)
        present: list[Memory] = []
        absent: dict[tuple[str, str], list[str]] = defaultdict(list)
        for item in syncs:
            assert item.memory_id is not None
            m = memories.get(item.memory_id)
            if in_index(m):
                assert m is not None
                present.append(m)
            elif item.layer:
                absent[(item.namespace, item.layer)].append(item.memory_id)
        # every id once per index call: Chroma refuses a batch naming an id twice
        present = list({m.id: m for m in present}.values())
        absent = defaultdict(list, {key: list(dict.fromkeys(ids)) for key, ids in absent.items()})
        if target == VECTOR:
            self._sync_vectors(present, absent)
        else:
            self._sync_activation(present, absent)

    def _purge(self, target: str, namespace: str) -> None:
        layers = [layer.value for layer in PERSISTENT_LAYERS]
        index = self._vectors if target == VECTOR else self._activation
        index.drop_namespace(namespace, layers)

    def _sync_vectors(self, present: list[Memory], absent: dict[tuple[str, str], list[str]]) -> None:
        for (namespace, layer), ids in absent.items():
            self._vectors.delete(namespace, layer, ids)
        if not present:
            return
        vectors = self.vectors_for(present)
        groups: dict[tuple[str, str], list[Memory]] = defaultdict(list)
        for m in present:
            groups[(m.namespace, m.layer.value)].append(m)
        for (namespace, layer), group in groups.items():
            self._vectors.upsert(
                namespace,
                layer,
                [m.id for m in group],
                np.stack([vectors[m.id] for m in group]),
                [m.kind.value for m in group],
            )

    def vectors_for(self, memories: Sequence[Memory]) -> dict[str, np.ndarray]:
        """Embeddings for ``memories``: cached in the store, computed (in batches) and cached if missing."""
        name = self._embedder.name
        vectors = self._store.get_embeddings(name, [m.id for m in memories])
        missing = [m for m in memories if m.id not in vectors]
        batch = self._config.write.batch_size
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            computed = self._embedder.embed_documents([m.content for m in chunk])
            fresh = {m.id: computed[i] for i, m in enumerate(chunk)}
            with self._store.transaction() as tx:
                tx.put_embeddings(name, _still_current(tx, chunk, fresh))
            vectors.update(fresh)
        return vectors

    def _sync_activation(self, present: list[Memory], absent: dict[tuple[str, str], list[str]]) -> None:
        for (namespace, layer), ids in absent.items():
            self._activation.delete(namespace, layer, ids)
        groups: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
        for m in present:
            rate = self._config.activation.rate(Layer(m.layer))
            groups[(m.namespace, m.layer.value)].append((m.id, activation_key(m.activation, rate)))
        for (namespace, layer), items in groups.items():
            self._activation.upsert(namespace, layer, items)


def _still_current(
    store: RelationalStore, embedded: Sequence[Memory], fresh: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The vectors whose memory still holds the text that was embedded. Call inside the caching
    transaction: a replace (``upsert``) committed while the embedder ran has already dropped the cached
    vector, and caching the old text's vector under the same id would serve it from then on."""
    current = store.get_many(fresh)
    return {m.id: fresh[m.id] for m in embedded if m.id in current and current[m.id].content == m.content}
