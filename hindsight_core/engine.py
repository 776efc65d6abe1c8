"""``Hindsight``: the engine's public API. Adapters call only this.

The class is composed of facets that mirror DESIGN.md: the write side and storage here, recall in
:mod:`hindsight_core.recall.api`, consolidation and eviction in :mod:`hindsight_core.lifecycle.api`.
Every async method runs its sync twin in a worker thread: one implementation path, and the event loop
never blocks on SQLite, Chroma or the embedder."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from ulid import ULID

from hindsight_core import environment
from hindsight_core.activation.base import ActivationIndex
from hindsight_core.clock import Clock, aware, system_clock, to_ts
from hindsight_core.config import HindsightConfig
from hindsight_core.embeddings.base import Embedder, resolve_embedder
from hindsight_core.environment import default_path
from hindsight_core.errors import BackendUnavailableError, EngineClosedError, InvalidInputError, UnknownNamespaceError
from hindsight_core.lifecycle.api import LifecycleMixin
from hindsight_core.ownership import DirectoryLock, releases_on_failure
from hindsight_core.portability import PortabilityMixin
from hindsight_core.progress import Progress, Tracker, track
from hindsight_core.recall.api import RecallMixin
from hindsight_core.store import open_store, workers
from hindsight_core.store.sql import ConstraintConflict
from hindsight_core.text.entities import extract_entities
from hindsight_core.text.normalize import fingerprint
from hindsight_core.text.salience import is_small_talk
from hindsight_core.text.tokens import TokenCounter, default_token_counter
from hindsight_core.transcripts import TranscriptMixin
from hindsight_core.types import (
    PERSISTENT_LAYERS,
    Activation,
    Event,
    Kind,
    Layer,
    LayerStats,
    Memory,
    NamespaceStats,
    ParkedWork,
    Stats,
    Status,
    WorkerStatus,
)
from hindsight_core.validation import (
    check_id,
    check_importance,
    check_kind,
    check_layer,
    check_metadata,
    check_namespace,
    check_role,
    check_session_id,
    check_text,
)
from hindsight_core.vectors.base import VectorIndex
from hindsight_core.write.outbox import ACTIVATION, PURGE, SYNC, TARGETS, VECTOR, ApplyReport, OutboxApplier
from hindsight_core.write.verify import verify_vectors

log = logging.getLogger("hindsight")

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class _Prepared:
    memory: Memory
    external_id: str | None


class Hindsight(RecallMixin, LifecycleMixin, TranscriptMixin, PortabilityMixin):
    """Long-term memory for agents.

    ``Hindsight(path=...)`` is the embedded default: SQLite, Chroma and the activation index all live in
    one directory, no server needed. ``database_url`` (``postgresql://…``) moves the relational store to
    PostgreSQL; ``redis_url`` moves the activation index to Redis; ``chroma_url``
    uses a Chroma server. ``clock`` returns an aware datetime; ``embedder`` is an :class:`Embedder`,
    a FlagEmbedding model name or path, or ``None`` for the bundled multilingual-e5-small."""

    @releases_on_failure
    def __init__(
        self,
        path: str | Path | None = None,
        *,
        database_url: str | None = None,
        redis_url: str | None = None,
        chroma_url: str | None = None,
        clock: Clock | None = None,
        embedder: Embedder | str | Path | None = None,
        config: HindsightConfig | None = None,
        token_counter: TokenCounter | None = None,
        vector_index: VectorIndex | None = None,
        activation_index: ActivationIndex | None = None,
        redis_client: Any = None,
        reconcile_on_open: bool = True,
        **facets: Any,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.path.mkdir(parents=True, exist_ok=True)
        # Services an argument does not name come from the environment (hindsight_core.environment).
        database_url = environment.database_url(database_url)
        chroma_url = environment.chroma_url(chroma_url) if vector_index is None else chroma_url
        if activation_index is None and redis_client is None:
            redis_url = environment.redis_url(redis_url)
        # Taken before anything else is created: a refused engine leaves the directory untouched.
        self._owner = self._claim_directory(chroma_url, vector_index)
        self.config = config or HindsightConfig()
        self._clock: Clock = clock or system_clock
        self.embedder: Embedder = resolve_embedder(embedder)
        self.tokens: TokenCounter = token_counter or default_token_counter()
        self.store = open_store(database_url or self.path / "hindsight.sqlite3")
        if vector_index is None:
            from hindsight_core.vectors.chroma import ChromaVectorIndex

            vector_index = ChromaVectorIndex(self.path / "chroma", url=chroma_url)
        self.vectors: VectorIndex = vector_index
        if activation_index is None:
            if redis_url or redis_client is not None:
                from hindsight_core.activation.redis import RedisActivationIndex

                activation_index = RedisActivationIndex(redis_client, url=redis_url)
            else:
                from hindsight_core.activation.sqlite import SqliteActivationIndex

                activation_index = SqliteActivationIndex(self.store)
        self.activation: ActivationIndex = activation_index
        self.outbox = OutboxApplier(self.store, self.vectors, self.activation, self.embedder, self.config)
        self.outbox.on_recovered = self._on_index_recovered
        self._sensory: dict[tuple[str, str | None], Memory] = {}
        self._closed = False
        self._close_lock = threading.Lock()
        self._init_facets(**facets)
        if reconcile_on_open:
            self.reconcile(verify=False)
            self._repair_lost_activation()

    def _claim_directory(self, chroma_url: str | None, vector_index: VectorIndex | None) -> DirectoryLock:
        """Own the data directory when this engine will run embedded Chroma in it (single-process by
        design). With a Chroma server or an injected index nothing here needs an owner: SQLite is shared
        safely between processes (WAL), so several processes may open the directory."""
        if vector_index is None and not chroma_url:
            return DirectoryLock.acquire(self.path)
        return DirectoryLock(self.path)  # not held; release() is a no-op

    # -- time ------------------------------------------------------------------------------------
    def now(self) -> datetime:
        return aware(self._clock(), what="clock()")

    # -- write -----------------------------------------------------------------------------------
    def _prepare(
        self,
        content: object,
        namespace: str,
        *,
        session_id: object,
        role: object,
        occurred_at: datetime | None,
        source_id: object,
        metadata: object,
        layer: object,
        kind: object,
        importance: object,
        now: datetime,
        index: bool | None = None,
    ) -> _Prepared:
        """Validate one event and build its memory; raises before anything is written."""
        if index is not None and not isinstance(index, bool):
            raise InvalidInputError(f"index must be a bool or None, got {type(index).__name__}")
        text = check_text(content, max_chars=self.config.write.max_content_chars)
        layer_ = check_layer(layer)
        if layer_ not in PERSISTENT_LAYERS:
            raise InvalidInputError(
                f"layer {layer_.value!r} is not stored: record episodes (the default) or semantic/procedural memories"
            )
        kind_ = check_kind(kind)
        session = check_session_id(session_id)
        role = check_role(role, max_chars=self.config.write.max_role_chars)
        if source_id is not None:
            source_id = check_text(source_id, what="source_id", max_chars=500)
        meta = check_metadata(
            metadata, max_depth=self.config.write.max_metadata_depth, max_bytes=self.config.write.max_metadata_bytes
        )
        level = check_importance(self.config.write.default_importance if importance is None else importance)
        when = now if occurred_at is None else aware(occurred_at, what="occurred_at")
        ts_now = to_ts(now)
        log_base = self.config.activation.initial_log + self.config.activation.importance_weight * (level - 3)
        memory = Memory(
            id=str(ULID.from_datetime(now)),
            namespace=namespace,
            session_id=session,
            layer=layer_,
            kind=kind_,
            role=role if isinstance(role, str) else None,
            content=text,
            occurred_at=when,
            created_at=now,
            updated_at=now,
            importance=level,
            # Imported history starts as old as it is: it decays from when it happened.
            activation=Activation(log_base=log_base, ref_time=min(to_ts(when), ts_now)),
            source_id=source_id if isinstance(source_id, str) else None,
            entities=extract_entities(text),
            fingerprint=fingerprint(text),
            indexed=not (layer_ == Layer.EPISODIC and is_small_talk(text)) if index is None else index,
            metadata=meta,
        )
        return _Prepared(memory, source_id if isinstance(source_id, str) else None)

    def _commit(self, namespace: str, prepared: Sequence[_Prepared]) -> list[Memory]:
        """Durably insert (skipping ids already imported under the same ``source_id``) with outbox rows in
        the same transaction; then try to bring the indexes in step at once."""
        now = to_ts(self.now())
        with self.store.transaction() as tx:
            by_layer: dict[Layer, list[str]] = {}
            for p in prepared:
                if p.external_id is not None:
                    by_layer.setdefault(p.memory.layer, []).append(p.external_id)
            existing = {
                (layer, key): m
                for layer, keys in by_layer.items()
                for key, m in tx.by_external_ids(namespace, layer.value, keys).items()
            }
            fresh: list[_Prepared] = []
            seen: set[tuple[Layer, str]] = set()
            result: list[Memory] = []
            for p in prepared:
                key = (p.memory.layer, p.external_id) if p.external_id is not None else None
                if key is not None and key in existing:
                    result.append(existing[key])
                    continue
                if key is not None and key in seen:
                    raise InvalidInputError(f"source_id {p.external_id!r} appears twice in one batch")
                if key is not None:
                    seen.add(key)
                fresh.append(p)
                result.append(p.memory)
            if fresh:
                tx.insert_memories([p.memory for p in fresh], [p.external_id for p in fresh])
                tx.enqueue(
                    [
                        (p.memory.id, namespace, p.memory.layer.value, target, SYNC)
                        for p in fresh
                        if p.memory.indexed
                        for target in TARGETS
                    ],
                    now,
                )
        new = [p.memory for p in fresh]
        if new:
            self.outbox.apply([m.id for m in new if m.indexed])
            for m in new:
                self._sensory[(namespace, m.session_id)] = m
            self._on_recorded(namespace, new)
        return result

    def record(
        self,
        content: str,
        namespace: str,
        *,
        session_id: str | None = None,
        role: str | None = "user",
        occurred_at: datetime | None = None,
        source_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        layer: Layer | str = Layer.EPISODIC,
        kind: Kind | str = Kind.TURN,
        importance: int | None = None,
        index: bool | None = None,
    ) -> Memory:
        """Store one event. Returns once it is durable in the relational store; it is recallable at once
        unless the salience gate marked it small talk. ``source_id`` is also an idempotency key: recording
        the same ``source_id`` again in a namespace returns the existing memory. ``index=False`` keeps the
        memory out of recall (stored for provenance and exact reads only); ``True`` indexes even small
        talk; ``None`` lets the salience gate decide."""
        namespace = check_namespace(namespace)
        prepared = self._prepare(
            content, namespace, session_id=session_id, role=role, occurred_at=occurred_at,
            source_id=source_id, metadata=metadata, layer=layer, kind=kind, importance=importance, now=self.now(),
            index=index,
        )
        return self._commit(namespace, [prepared])[0]

    def record_many(
        self,
        events: Iterable[Event | Mapping[str, Any] | str],
        namespace: str,
        *,
        progress: Progress = False,
        on_commit: Callable[[list[Memory]], None] | None = None,
    ) -> list[Memory]:
        """Bulk import, one transaction and one embedding batch per ``config.write.batch_size`` events.

        Every event is validated before the first one is written. ``on_commit`` is called after each
        batch is durable (an acknowledgement you can log). ``progress``: ``True`` for a tqdm bar, or a
        ``(done, total)`` callback."""
        namespace = check_namespace(namespace)
        if isinstance(events, str | bytes | Mapping) or not isinstance(events, Iterable):
            raise InvalidInputError(f"events must be an iterable of events, got {type(events).__name__}")
        now = self.now()
        prepared: list[_Prepared] = []
        for index, raw in enumerate(events):
            try:
                event = Event(content=raw) if isinstance(raw, str) else Event.model_validate(raw)
            except Exception as exc:
                raise InvalidInputError(f"event {index} is malformed: {exc}") from exc
            try:
                prepared.append(
                    self._prepare(
                        event.content, namespace, session_id=event.session_id, role=event.role,
                        occurred_at=event.occurred_at, source_id=event.source_id, metadata=event.metadata,
                        layer=event.layer, kind=event.kind, importance=event.importance, now=now,
                    )
                )
            except InvalidInputError as exc:
                raise InvalidInputError(f"event {index}: {exc}") from exc
        keys = [(p.memory.layer, p.external_id) for p in prepared if p.external_id is not None]
        if len(keys) != len(set(keys)):
            raise InvalidInputError("two events share a source_id; source_id must be unique within a namespace")
        batch = self.config.write.batch_size
        stored: list[Memory] = []
        with track(progress, len(prepared), f"record {namespace}", "event") as bar:
            for start in range(0, len(prepared), batch):
                committed = self._commit(namespace, prepared[start : start + batch])
                stored += committed
                if on_commit is not None:
                    on_commit(committed)
                bar.advance(len(committed))
        return stored

    def upsert(
        self,
        content: str,
        namespace: str,
        *,
        source_id: str,
        session_id: str | None = None,
        role: str | None = "user",
        occurred_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        layer: Layer | str = Layer.EPISODIC,
        kind: Kind | str = Kind.TURN,
        importance: int | None = None,
        index: bool | None = None,
    ) -> Memory:
        """Record under ``source_id``, or replace the memory already stored under it, in one transaction.

        ``record`` treats a known ``source_id`` as a re-run import and keeps the first value; a key/value
        caller (a LangGraph store item) needs the new value instead. Replacing by forget + record would
        leave a window, between two commits, in which a reader finds no memory and a crash keeps none:
        here a reader sees the old or the new value and a crash leaves one of them. The replaced memory
        keeps its id, ``created_at`` and access count; everything the caller gives is rewritten and
        ``updated_at`` moves to now. Same arguments as :meth:`record`, ``source_id`` required."""
        namespace = check_namespace(namespace)
        if source_id is None:
            raise InvalidInputError("upsert needs a source_id: it names the memory to replace")
        prepared = self._prepare(
            content, namespace, session_id=session_id, role=role, occurred_at=occurred_at,
            source_id=source_id, metadata=metadata, layer=layer, kind=kind, importance=importance, now=self.now(),
            index=index,
        )
        memory, created = self._replace(namespace, prepared)
        self.outbox.apply([memory.id])
        self._sensory[(namespace, memory.session_id)] = memory
        if created:
            self._on_recorded(namespace, [memory])
        return memory

    def _replace(self, namespace: str, p: _Prepared) -> tuple[Memory, bool]:
        """Insert ``p`` or rewrite the memory holding its key; returns the stored memory and whether it
        is new. Two writers of one new key can both find it absent and both insert: the unique index on
        (namespace, layer, external_id) refuses the second, which then retries and finds the first."""
        assert p.external_id is not None
        layer = p.memory.layer.value
        now = to_ts(self.now())
        for attempt in range(3):
            try:
                with self.store.transaction() as tx:
                    existing = tx.by_external_ids(namespace, layer, [p.external_id]).get(p.external_id)
                    if existing is None:
                        tx.insert_memories([p.memory], [p.external_id])
                        if p.memory.indexed:
                            tx.enqueue([(p.memory.id, namespace, layer, t, SYNC) for t in TARGETS], now)
                        return p.memory, True
                    memory = p.memory.model_copy(
                        update={
                            "id": existing.id,
                            "created_at": existing.created_at,
                            "access_count": existing.access_count,
                        }
                    )
                    tx.update_memory(memory)
                    # The cached vector is keyed by memory id: left alone it would index the old text.
                    tx.drop_embeddings([memory.id])
                    # Both targets, indexed or not: an item that stops being indexed must leave them.
                    tx.enqueue([(memory.id, namespace, layer, t, SYNC) for t in TARGETS], now)
                    return memory, False
            except ConstraintConflict:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    # -- read ------------------------------------------------------------------------------------
    def get(self, memory_id: str, *, namespace: str | None = None) -> Memory | None:
        """The memory with this id, or ``None``. With ``namespace``, a memory of another namespace is
        ``None`` too (tenant wall)."""
        memory_id = check_id(memory_id)
        if namespace is None:
            return self.store.get(memory_id)
        return self.store.get_many_in(check_namespace(namespace), [memory_id]).get(memory_id)

    def working(self, namespace: str, session_id: str, *, budget_tokens: int | None = None) -> list[Memory]:
        """The session's recent turns, verbatim, oldest first, within a token budget (working memory).

        Read from the relational store, so every process sharing the data sees the same window."""
        namespace = check_namespace(namespace)
        session = check_session_id(session_id)
        assert session is not None
        budget = self.config.write.working_budget_tokens if budget_tokens is None else budget_tokens
        window: list[Memory] = []
        used = 0
        for m in self.store.session_tail(namespace, session, limit=500):
            cost = self.tokens.count(m.content)
            if window and used + cost > budget:
                break
            window.append(m)
            used += cost
        return window[::-1]

    def find(
        self,
        namespace: str,
        *,
        session_id: str | None = None,
        layer: Layer | str | None = None,
        kind: Kind | str | None = None,
        source_ids: Sequence[str] | None = None,
        status: Status | str | None = None,
        limit: int | None = None,
    ) -> list[Memory]:
        """Memories of one namespace matching exact attributes, in write order (oldest first).

        Recall ranks by relevance and may drop what it finds weak; adapters that keep a verbatim log or a
        key/value item (chat histories, LangGraph stores) need the exact, complete read this gives.
        ``source_ids`` are the ids given to ``record(source_id=...)``."""
        namespace = check_namespace(namespace)
        where, params = ["namespace = ?"], [namespace]
        if session_id is not None:
            where.append("session_id = ?")
            params.append(check_session_id(session_id) or "")
        if layer is not None:
            where.append("layer = ?")
            params.append(check_layer(layer).value)
        if kind is not None:
            where.append("kind = ?")
            params.append(check_kind(kind).value)
        if status is not None:
            try:
                where.append("status = ?")
                params.append(Status(status).value)
            except ValueError:
                raise InvalidInputError(f"unknown status {status!r}") from None
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidInputError(f"limit must be a positive int or None, got {limit!r}")
        if source_ids is None:
            return self.store.select(" AND ".join(where), params, limit=limit)
        if isinstance(source_ids, str | bytes) or not isinstance(source_ids, Iterable):
            raise InvalidInputError("source_ids must be a sequence of str")
        keys = list(dict.fromkeys(check_text(k, what="source_ids item", max_chars=500) for k in source_ids))
        if not keys:
            return []
        where.append(f"external_id IN ({', '.join('?' * len(keys))})")
        return self.store.select(" AND ".join(where), [*params, *keys], limit=limit)

    def sensory(self, namespace: str, session_id: str | None = None) -> Memory | None:
        """The current turn: the last event this process recorded for the session (sensory memory)."""
        return self._sensory.get((check_namespace(namespace), session_id))

    def namespaces(self) -> list[str]:
        return self.store.namespaces()

    # -- forget ----------------------------------------------------------------------------------
    def forget(self, memory_id: str, *, namespace: str | None = None) -> bool:
        """Erase one memory, from the store or from its archive file: no table keeps its content, vector or
        id but a tombstone (id, namespace, time), and a distilled memory whose sources were all erased goes
        with it (facts that keep other sources just lose this one). One transaction; the indexes drop the
        ids after commit. Returns ``False`` when there was none (or it is in another namespace than the one
        named)."""
        memory = self.get(memory_id, namespace=namespace)
        if memory is None:  # an archived memory is erased from its archive file
            return self._forget_archived(check_id(memory_id), None if namespace is None else check_namespace(namespace))
        return bool(self._erase(memory.namespace, [memory.id]))

    def _erase(self, namespace: str, seeds: Sequence[str], *, archived: bool = False) -> list[str]:
        """Erase ``seeds`` and what was distilled only from them, in one transaction; returns the ids.
        ``archived`` seeds are no longer in the store (their records leave the archive file): they get
        tombstones and leave the logs and other memories' provenance all the same."""
        from hindsight_core.store.erase import closure, erase

        now = to_ts(self.now())
        with self.store.transaction() as tx:
            stored, rewritten = closure(tx, namespace, seeds)
            ids = [mid for mid, _ in stored]
            if not ids and not archived:  # erased by another caller between the read and the transaction
                return []
            gone = list(dict.fromkeys([*seeds, *ids])) if archived else ids
            erase(tx, namespace, gone, rewritten, now)
            tx.enqueue([(mid, namespace, layer, t, SYNC) for mid, layer in stored for t in TARGETS], now)
            self._forget_memories_extra(namespace, gone)
        self.outbox.apply(ids)
        dropped = set(gone)
        self._sensory = {k: v for k, v in self._sensory.items() if v.id not in dropped}
        return gone

    def forget_namespace(self, namespace: str) -> int:
        """Erase every memory of a namespace (tombstones stay, as for ``forget``); returns how many.
        Unknown namespaces raise."""
        from hindsight_core.store.erase import purge_namespace

        namespace = check_namespace(namespace)
        if not (self.store.has_namespace(namespace) or self._holds_namespace(namespace)):
            raise UnknownNamespaceError(f"namespace {namespace!r} holds no memories")
        with self.store.transaction() as tx:
            ids = purge_namespace(tx, namespace, to_ts(self.now()))
            tx.enqueue([(None, namespace, None, t, PURGE) for t in TARGETS], to_ts(self.now()))
            self._forget_namespace_extra(namespace)
        self._after_forget_namespace(namespace)
        self.outbox.apply(None)
        self._sensory = {k: v for k, v in self._sensory.items() if k[0] != namespace}
        return len(ids)

    # -- maintenance -----------------------------------------------------------------------------
    def reconcile(self, *, verify: bool = True, progress: Progress = False) -> ApplyReport:
        """Bring the derived indexes in step with the relational store.

        Applies everything pending in the outbox (this part runs on open). With ``verify`` it also
        compares, per namespace and layer, the ids each index holds with the ids it should hold and
        repairs the difference — what an index restarted empty (Redis without persistence) needs —
        and probes the vector index with a bounded sample of stored vectors, rebuilding a namespace
        (or a layer) whose index answers wrongly, e.g. a Chroma directory two processes wrote
        (:mod:`hindsight_core.write.verify`). The result is then a :class:`ReconcileReport`.
        ``progress`` (``True`` for a tqdm bar, or a ``(done, total)`` callback) counts the namespaces
        compared."""
        tracker = track(progress, 1, "reconcile", "step")
        with tracker:
            self.store.unpark()  # parked work gets a fresh set of attempts on demand
            report = self.outbox.apply(None, force=True)
            tracker.advance()
            if not verify or report.failed:
                return report
            return self._reconcile_verify(report, tracker)

    def _reconcile_verify(self, report: ApplyReport, tracker: Tracker) -> ApplyReport:
        now = to_ts(self.now())
        rows = self._index_drift(TARGETS, tracker)
        if rows:
            log.warning("reconcile: %d index entries out of step; repairing", len(rows))
            with self.store.transaction() as tx:
                tx.enqueue(rows, now)
            repaired = self.outbox.apply(None, force=True)
            report.applied += repaired.applied
            report.failed += repaired.failed
            report.errors.update(repaired.errors)
        verified = verify_vectors(self.store, self.vectors, self.outbox, self.embedder.name, now)
        verified.absorb(report)
        tracker.advance()
        return verified

    def reembed(self, namespace: str | None = None, *, progress: Progress = False) -> int:
        """Recompute the cached vectors of every indexed active memory (of one namespace, or all) with
        the current embedder and write them to the vector index; returns how many. Cached vectors are
        reused for ever (index rebuilds never embed), keyed by the embedder's name: when the model changed
        under the same name (a fine-tuned model saved over the old path) or the cache is suspect, this is
        how the vectors are brought up to date. Batch by batch: a batch's vectors are dropped in the
        transaction that queues its index work, so an interrupted run is finished by the outbox on the
        next open."""
        if namespace is not None:
            namespace = check_namespace(namespace)
            if not self.store.has_namespace(namespace):
                raise UnknownNamespaceError(f"namespace {namespace!r} holds no memories")
        rows = self.store.indexed_active_ids(namespace)
        batch = self.config.write.batch_size
        with track(progress, len(rows), "re-embed", "memory") as bar:
            for start in range(0, len(rows), batch):
                chunk = rows[start : start + batch]
                ids = [mid for mid, _, _ in chunk]
                with self.store.transaction() as tx:
                    tx.drop_embeddings(ids)
                    tx.enqueue([(mid, ns, layer, VECTOR, SYNC) for mid, ns, layer in chunk], to_ts(self.now()))
                self.outbox.apply(ids)
                bar.advance(len(chunk))
        return len(rows)

    def _on_index_recovered(self, target: str) -> None:
        """A target answers again after an outage: it may have come back empty."""
        if target == ACTIVATION:
            self._repair_lost_activation()

    def _repair_lost_activation(self) -> int:
        """Repair an activation index that lost its data (Redis restarted without persistence) without
        waiting for ``reconcile(verify=True)``. The index keeps a marker that lives exactly as long as its
        data, so the full comparison runs only when the marker is gone. Returns the entries re-queued."""
        intact = getattr(self.activation, "intact", None)
        mark = getattr(self.activation, "mark_intact", None)
        if intact is None or mark is None:
            return 0  # an index living in the relational store cannot lose data on its own
        try:
            dataset = self.store.dataset_id()
            if intact(dataset):
                return 0
            rows = self._index_drift([ACTIVATION])
            if rows:
                log.warning("activation index lost %d entries (restarted empty?); repairing", len(rows))
                with self.store.transaction() as tx:
                    tx.enqueue(rows, to_ts(self.now()))
            mark(dataset)  # after the repair work is durable in the outbox
        except BackendUnavailableError as exc:  # down again: checked once more when it answers
            log.info("activation index check postponed: %s", exc)
            return 0
        if rows:
            self.outbox.apply(None, force=True)
        return len(rows)

    def _index_drift(
        self, targets: Sequence[str], tracker: Tracker | None = None
    ) -> list[tuple[str | None, str, str | None, str, str]]:
        """Outbox rows for every memory whose presence in the ``targets`` indexes is wrong (missing, or
        held though it should not be)."""
        rows: list[tuple[str | None, str, str | None, str, str]] = []
        namespaces = self.store.namespaces()
        if tracker is not None:
            tracker.grow(len(namespaces) + 1)
        for namespace in namespaces:
            if tracker is not None:
                tracker.advance()
            for layer in PERSISTENT_LAYERS:
                expected = set(self.store.indexed_ids(namespace, layer.value))
                for target in targets:
                    if target == VECTOR:
                        held = self.vectors.ids(layer.value, namespace)
                    else:
                        held = {mid for mid, _ in self.activation.top(namespace, layer.value, len(expected) + 10_000)}
                    rows += [(mid, namespace, layer.value, target, SYNC) for mid in expected ^ held]
        return rows

    def stats(self, namespace: str | None = None) -> Stats:
        if namespace is not None:
            namespace = check_namespace(namespace)
            if not self.store.has_namespace(namespace):
                raise UnknownNamespaceError(f"namespace {namespace!r} holds no memories")
        stats = Stats(outbox_pending=self.store.pending_count())
        parked = self.store.parked()
        stats.outbox_parked = len(parked)
        stats.outbox_errors = [
            ParkedWork(memory_id=mid, target=target, op=op, attempts=attempts, error=error)
            for _, mid, target, op, attempts, error in parked[:100]
        ]
        for ns, layer, status, indexed, count in self.store.memory_counts(namespace):
            ns_stats = stats.namespaces.setdefault(ns, NamespaceStats())
            layer_stats = ns_stats.layers.setdefault(layer, LayerStats())
            layer_stats.by_status[status] = layer_stats.by_status.get(status, 0) + count
            if indexed and status == Status.ACTIVE.value:
                layer_stats.indexed += count
            stats.total += count
        for ns, ns_stats in stats.namespaces.items():
            self._extend_stats(ns, ns_stats)
        stats.workers = [WorkerStatus.model_validate(w) for w in workers.live(self.store, to_ts(self.now()))]
        return stats

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._close_facets()
        for closer in (self.vectors.close, self.activation.close, self.store.close):
            try:
                closer()
            except Exception as exc:  # closing must not raise over a backend already gone
                log.debug("close: %s", exc)
        self._owner.release()  # last: the next owner must find Chroma and SQLite closed

    def _ensure_open(self, operation: str) -> None:
        if getattr(self, "_closed", False):
            raise EngineClosedError(f"{operation}: this Hindsight engine at {str(self.path)!r} is closed")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _guard_public_methods(cls, list(vars(cls)))

    def __enter__(self) -> Hindsight:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Hindsight(path={str(self.path)!r}, embedder={self.embedder.name!r})"

    # -- async twins -----------------------------------------------------------------------------
    async def arecord(self, content: str, namespace: str, **kwargs: Any) -> Memory:
        return await asyncio.to_thread(self.record, content, namespace, **kwargs)

    async def arecord_many(
        self, events: Iterable[Event | Mapping[str, Any] | str], namespace: str, **kwargs: Any
    ) -> list[Memory]:
        # Materialise a lazy iterable here, not in the worker thread; anything else is record_many's to refuse.
        lazy = isinstance(events, Iterable) and not isinstance(events, str | bytes | Mapping)
        batch = list(events) if lazy else events
        return await asyncio.to_thread(self.record_many, batch, namespace, **kwargs)

    async def aupsert(self, content: str, namespace: str, **kwargs: Any) -> Memory:
        return await asyncio.to_thread(self.upsert, content, namespace, **kwargs)

    async def aget(self, memory_id: str, *, namespace: str | None = None) -> Memory | None:
        return await asyncio.to_thread(self.get, memory_id, namespace=namespace)

    async def afind(self, namespace: str, **kwargs: Any) -> list[Memory]:
        return await asyncio.to_thread(self.find, namespace, **kwargs)

    async def aworking(self, namespace: str, session_id: str, *, budget_tokens: int | None = None) -> list[Memory]:
        return await asyncio.to_thread(self.working, namespace, session_id, budget_tokens=budget_tokens)

    async def aforget(self, memory_id: str, *, namespace: str | None = None) -> bool:
        return await asyncio.to_thread(self.forget, memory_id, namespace=namespace)

    async def aforget_namespace(self, namespace: str) -> int:
        return await asyncio.to_thread(self.forget_namespace, namespace)

    async def areconcile(self, *, verify: bool = True, progress: Progress = False) -> ApplyReport:
        return await asyncio.to_thread(self.reconcile, verify=verify, progress=progress)

    async def areembed(self, namespace: str | None = None, *, progress: Progress = False) -> int:
        return await asyncio.to_thread(self.reembed, namespace, progress=progress)

    async def astats(self, namespace: str | None = None) -> Stats:
        return await asyncio.to_thread(self.stats, namespace)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


#: Public methods that stay usable after ``close()``: closing again, and reading the clock.
_OPEN_AFTER_CLOSE = frozenset({"close", "aclose", "now"})


def _requires_open(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a public method so a closed engine refuses it with :class:`EngineClosedError` on entry,
    before any facet touches a closed backend (Chroma, Redis and the recall pipeline raise their own
    errors, or silently reopen, when used after close)."""
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def guarded_async(self: Hindsight, *args: Any, **kwargs: Any) -> Any:
            self._ensure_open(method.__name__)
            return await method(self, *args, **kwargs)

        guarded: Callable[..., Any] = guarded_async
    else:

        @functools.wraps(method)
        def guarded_sync(self: Hindsight, *args: Any, **kwargs: Any) -> Any:
            self._ensure_open(method.__name__)
            return method(self, *args, **kwargs)

        guarded = guarded_sync
    guarded.__dict__["_requires_open"] = True
    return guarded


def _guard_public_methods(cls: type, names: Iterable[str]) -> None:
    """One mechanism for every public method of the engine, its facets and subclasses, sync and async."""
    for name in names:
        if name.startswith("_") or name in _OPEN_AFTER_CLOSE:
            continue
        method = inspect.getattr_static(cls, name)
        if inspect.isfunction(method) and not method.__dict__.get("_requires_open"):
            setattr(cls, name, _requires_open(method))


_guard_public_methods(Hindsight, dir(Hindsight))

_shared: Hindsight | None = None
_shared_lock = threading.Lock()


def shared_engine() -> Hindsight:
    """The process-wide embedded engine at the default data directory (``$HINDSIGHT_PATH`` or
    ``./.hindsight``); adapters use it when no engine is passed."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._closed:
            _shared = Hindsight(default_path())
        return _shared


__all__ = ["ACTIVATION", "VECTOR", "Hindsight", "shared_engine"]
