"""Keeping the derived indexes in step with the relational store: reconcile, re-embed, and the repair of
an index that came back empty or was never this data set's.

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
from hindsight_core.store.erase import erased_among
from hindsight_core.types import PERSISTENT_LAYERS
from hindsight_core.write.outbox import ACTIVATION, SYNC, TARGETS, VECTOR, ApplyReport
from hindsight_core.write.verify import expected_ids, verify_vectors

#: How often (seconds, at most) a process that writes looks at the activation index's marker.
ACTIVATION_CHECK_S = 1.0

log = logging.getLogger("hindsight")


class IndexMaintenance:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self._activation_checked = time.monotonic()  # open checks it (``claim_indexes``)
        self._check_lock = threading.Lock()

    def reconcile(self, *, verify: bool = True, progress: Progress = False, at_open: bool = False) -> ApplyReport:
        """Look at both indexes' markers (:meth:`claim_indexes`), apply the outbox, and with ``verify``
        compare and probe every index entry (:meth:`_verify`)."""
        tracker = track(progress, 1, "reconcile", "step")
        with tracker:
            self.claim_indexes(at_open=at_open)
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
        """A target answers again after an outage: it may have come back empty. Called after a write was
        acknowledged, so a failure is logged, not raised."""
        self._repair_quietly(target)

    def check_activation_on_clock(self) -> None:
        """After the writes are applied: look at the activation index's marker at most every
        ``ACTIVATION_CHECK_S``. A Redis that restarted empty between two calls raises nothing for the
        outbox to see, so only the marker tells; one ``GET`` a second is its price."""
        now = time.monotonic()
        with self._check_lock:
            if now - self._activation_checked < ACTIVATION_CHECK_S:
                return
            self._activation_checked = now  # before the repair, which applies writes (and comes here)
        self._repair_quietly(ACTIVATION)

    def _repair_quietly(self, target: str) -> None:
        try:
            self.repair_lost(target)
        except Exception as exc:  # the write that brought us here is acknowledged: never fail it
            log.warning("%s index check failed: %s: %s", target, type(exc).__name__, exc)

    def claim_indexes(self, *, at_open: bool = False) -> None:
        """:meth:`repair_lost` for both indexes: on open, and first in ``reconcile``. ``at_open`` trusts
        the store's note that the embedded Chroma directory holds this data set's marker, so that opening
        the engine does not open Chroma (``ChromaVectorIndex.lazy_path``)."""
        for target in TARGETS:
            self.repair_lost(target, trust_note=at_open)

    def repair_lost(self, target: str, *, trust_note: bool = False) -> int:
        """Make the ``target`` index this data set's, complete. The index keeps a marker naming the data
        set that owns its names; it lives exactly as long as the index's data, so the full comparison
        with the store runs only when the marker is missing: an index that lost its data (Redis restarted
        without persistence, a Chroma server started empty), or one this data set never wrote under these
        names (a new server, or the unscoped names of a version before issue 38, whose entries of this
        data set are then removed). It is rebuilt from the store, then marked. A marker naming another
        data set raises :class:`ForeignDataSetError` and touches nothing. Returns the entries re-queued."""
        index = self.ctx.vectors if target == VECTOR else self.ctx.activation
        intact = getattr(index, "intact", None)
        mark = getattr(index, "mark_intact", None)
        if intact is None or mark is None:
            return 0  # an index living in the relational store cannot lose data on its own
        store = self.ctx.store
        noted = getattr(index, "lazy_path", None)
        if trust_note and noted is not None and store.index_noted(noted):
            return 0
        try:
            dataset = store.dataset_id()
            rows: list[OutboxRow] = []
            if not intact(dataset):
                rows = self._drift([target])
                # Applied only after the marker is set, below: the repair work is durable in the outbox first.
                with self.ctx.changes(apply="later") as ch:
                    if rows:
                        log.warning("%s index holds no marker of this data set (lost its data, or written "
                                    "under names of an earlier version): rebuilding %d entries", target, len(rows))
                        ch.queue(rows)
                release = getattr(index, "release_legacy", None)
                if callable(release):
                    release(dataset, store.namespaces(), [layer.value for layer in PERSISTENT_LAYERS], self._owned)
                mark(dataset)
        except BackendUnavailableError as exc:  # down again: checked once more when it answers
            log.info("%s index check postponed: %s", target, exc)
            return 0
        if noted is not None:
            store.note_index(noted)
        if rows:
            self.ctx.outbox.apply(None, force=True)
        return len(rows)

    def _owned(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` are this data set's: stored, or erased (a tombstone)."""
        store = self.ctx.store
        return set(store.existing_ids(ids)) | erased_among(store, ids)

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
