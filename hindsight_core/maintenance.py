"""Keeping the derived indexes in step with the relational store: reconcile, re-embed, and the repair of
an activation index that came back empty.

The relational store is the truth; the vector and activation indexes are derived from it through the
outbox. This service computes what is out of step and queues the repair through the context's unit of
work like any other write."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from hindsight_core.context import EngineContext, OutboxRow
from hindsight_core.errors import BackendUnavailableError, EmbedderMismatchError
from hindsight_core.progress import Progress, Tracker, track
from hindsight_core.types import PERSISTENT_LAYERS
from hindsight_core.write.outbox import ACTIVATION, SYNC, TARGETS, VECTOR, ApplyReport
from hindsight_core.write.verify import expected_ids, verify_vectors

#: How often (seconds, at most) a process that writes looks at the activation index's marker.
ACTIVATION_CHECK_S = 1.0

log = logging.getLogger("hindsight")


class IndexMaintenance:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self._activation_checked = time.monotonic()  # open checks it (``repair_lost_activation``)
        self._check_lock = threading.Lock()

    def reconcile(self, *, verify: bool = True, progress: Progress = False) -> ApplyReport:
        tracker = track(progress, 1, "reconcile", "step")
        with tracker:
            self.ctx.store.unpark()  # parked work gets a fresh set of attempts on demand
            report = self.ctx.outbox.apply(None, force=True)
            tracker.advance()
            if not verify or report.failed:
                return report
            return self._verify(report, tracker)

    def _verify(self, report: ApplyReport, tracker: Tracker) -> ApplyReport:
        rows = self._drift(TARGETS, tracker)
        if rows:
            log.warning("reconcile: %d index entries out of step; repairing", len(rows))
            with self.ctx.changes(apply="all", force=True) as ch:
                ch.queue(rows)
            report.applied += ch.applied.applied
            report.failed += ch.applied.failed
            report.errors.update(ch.applied.errors)
        verified = verify_vectors(self.ctx.store, self.ctx.vectors, self.ctx.embedder.name, self._resync)
        verified.absorb(report)
        tracker.advance()
        return verified

    def _resync(self, namespaces: list[str], layer: str) -> ApplyReport:
        """Queue a vector sync of every memory ``namespaces`` should hold in ``layer``, and apply it."""
        with self.ctx.changes(apply="all", force=True) as ch:
            for namespace in namespaces:
                ch.sync_ids(((mid, namespace, layer) for mid in expected_ids(ch.tx, namespace, layer)), (VECTOR,))
        return ch.applied

    def reembed(self, namespace: str | None, *, progress: Progress = False) -> int:
        """Batch by batch: a batch's vectors are dropped in the unit of work that queues its index work,
        so an interrupted run is finished by the outbox on the next open."""
        rows = self.ctx.store.indexed_active_ids(namespace)
        batch = self.ctx.config.write.batch_size
        with track(progress, len(rows), "re-embed", "memory") as bar:
            for start in range(0, len(rows), batch):
                chunk = rows[start : start + batch]
                with self.ctx.changes() as ch:
                    ch.tx.drop_embeddings([mid for mid, _, _ in chunk])
                    ch.sync_ids(chunk, targets=(VECTOR,))
                bar.advance(len(chunk))
        return len(rows)

    def check_embedder(self, *, reembed: bool) -> int:
        """Refuse an embedder other than the one the data set's vectors come from, or (``reembed``) move
        the data set to it; returns how many memories were queued for embedding again.

        Cached vectors are keyed by model name, so another model would not read them; but the vector
        index holds the old model's vectors (of another dimension, or of another space under the same
        one), and recall would compare a new-model query with them. The move drops the namespaces'
        vector collections and every cached vector, then queues every indexed memory for the vector
        index and records the new embedder in one unit of work, so an interrupted move is finished by
        the outbox on the next open (the collections are derived: dropping them first loses nothing)."""
        embedder, store = self.ctx.embedder, self.ctx.store
        wanted = (embedder.name, int(embedder.dim))
        recorded = store.recorded_embedder()
        if recorded == wanted:
            return 0
        if recorded is None or not store.namespaces():  # nothing embedded yet: this embedder it is
            with store.transaction() as tx:
                tx.record_embedder(*wanted)
            return 0
        if not reembed:
            raise EmbedderMismatchError(
                f"the data set at {self._where()} holds vectors from embedder {recorded[0]!r} ({recorded[1]} "
                f"dimensions), but this engine was opened with {wanted[0]!r} ({wanted[1]} dimensions): vectors "
                "of two models cannot be compared. Open it with the embedder it was built with, or move it to "
                "the new one with Hindsight(..., embedder=<the new one>, reembed=True), which embeds every "
                "indexed memory again and rebuilds the vector index (README, \"Changing the "
                "embedder\"). Nothing was changed."
            )
        log.warning("moving the data set from embedder %r (%d) to %r (%d): every memory is embedded again",
                    *recorded, *wanted)
        layers = [layer.value for layer in PERSISTENT_LAYERS]
        reset_layer = getattr(self.ctx.vectors, "reset_layer", None)
        if callable(reset_layer):  # collections shared by namespaces (Chroma's pools) have the old dimension
            for layer in layers:
                reset_layer(layer)
        else:
            for namespace in store.namespaces():
                self.ctx.vectors.drop_namespace(namespace, layers)
        rows = store.indexed_active_ids()
        with self.ctx.changes(apply="later") as ch:
            ch.tx.drop_all_embeddings()
            ch.sync_ids(rows, targets=(VECTOR,))
            ch.tx.record_embedder(*wanted)
        self.ctx.outbox.apply(None, force=True)
        return len(rows)

    def _where(self) -> str:
        store = self.ctx.store
        return repr(str(getattr(store, "where", None) or getattr(store, "path", self.ctx.path)))

    def on_index_recovered(self, target: str) -> None:
        """A target answers again after an outage: it may have come back empty."""
        if target == ACTIVATION:
            self.repair_lost_activation()

    def check_activation_on_clock(self) -> None:
        """After the writes are applied: look at the activation index's marker at most every
        ``ACTIVATION_CHECK_S``. A Redis that restarted empty between two calls raises nothing for the
        outbox to see, so only the marker tells; one ``EXISTS`` a second is its price."""
        now = time.monotonic()
        with self._check_lock:
            if now - self._activation_checked < ACTIVATION_CHECK_S:
                return
            self._activation_checked = now  # before the repair, which applies writes (and comes here)
        try:
            self.repair_lost_activation()
        except Exception as exc:  # the write that brought us here is acknowledged: never fail it
            log.warning("activation index check failed: %s: %s", type(exc).__name__, exc)

    def repair_lost_activation(self) -> int:
        """Repair an activation index that lost its data (Redis restarted without persistence) without
        waiting for ``reconcile(verify=True)``. The index keeps a marker that lives exactly as long as its
        data, so the full comparison runs only when the marker is gone. Returns the entries re-queued."""
        activation = self.ctx.activation
        intact = getattr(activation, "intact", None)
        mark = getattr(activation, "mark_intact", None)
        if intact is None or mark is None:
            return 0  # an index living in the relational store cannot lose data on its own
        try:
            dataset = self.ctx.store.dataset_id()
            if intact(dataset):
                return 0
            rows = self._drift([ACTIVATION])
            # Applied only after the marker is set, below: the repair work is durable in the outbox first.
            with self.ctx.changes(apply="later") as ch:
                if rows:
                    log.warning("activation index lost %d entries (restarted empty?); repairing", len(rows))
                    ch.queue(rows)
            mark(dataset)
        except BackendUnavailableError as exc:  # down again: checked once more when it answers
            log.info("activation index check postponed: %s", exc)
            return 0
        if rows:
            self.ctx.outbox.apply(None, force=True)
        return len(rows)

    def _drift(self, targets: Sequence[str], tracker: Tracker | None = None) -> list[OutboxRow]:
        """Outbox rows for every memory whose presence in the ``targets`` indexes is wrong (missing, or
        held though it should not be)."""
        store = self.ctx.store
        rows: list[OutboxRow] = []
        namespaces = store.namespaces()
        if tracker is not None:
            tracker.grow(len(namespaces) + 1)
        for namespace in namespaces:
            if tracker is not None:
                tracker.advance()
            for layer in PERSISTENT_LAYERS:
                expected = set(store.indexed_ids(namespace, layer.value))
                for target in targets:
                    index = self.ctx.vectors if target == VECTOR else self.ctx.activation
                    held = index.ids(namespace=namespace, layer=layer.value)
                    rows += [(mid, namespace, layer.value, target, SYNC) for mid in expected ^ held]
        return rows


__all__ = ["IndexMaintenance"]
