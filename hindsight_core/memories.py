"""The write service: record, replace, read and erase memories (the engine's own store operations).

Every write goes through the context's unit of work (:meth:`EngineContext.changes`): one transaction
with its outbox rows, applied to the indexes after the commit. What other services must do around a
write (the lifecycle's consolidation trigger after a record, recall forgetting what it buffered of an
erased memory) is sequenced by :class:`hindsight_core.Hindsight`, not called from here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tenacity import retry, retry_if_exception_type, stop_after_attempt
from ulid import ULID

from hindsight_core.activation import math as activation_math
from hindsight_core.clock import aware, from_ts, to_ts
from hindsight_core.context import Changes, EngineContext
from hindsight_core.errors import InvalidInputError, MemoryNotFoundError, UnknownNamespaceError
from hindsight_core.store import demotions
from hindsight_core.store.erase import closure, erase, purge_namespace, subtree_namespaces
from hindsight_core.store.sql import ConstraintConflict
from hindsight_core.text.entities import extract_entities
from hindsight_core.text.normalize import fingerprint
from hindsight_core.text.salience import is_small_talk
from hindsight_core.types import (
    PERSISTENT_LAYERS,
    ChainLink,
    EdgeKind,
    Event,
    Kind,
    Layer,
    LayerStats,
    Memory,
    MemoryDemotion,
    MemoryEdit,
    MemoryHistory,
    NamespaceStats,
    ParkedWork,
    Stats,
    Status,
)
from hindsight_core.validation import (
    check_id,
    check_importance,
    check_kind,
    check_layer,
    check_metadata,
    check_metadata_filter,
    check_namespace,
    check_role,
    check_session_id,
    check_text,
)


@dataclass(frozen=True)
class Prepared:
    """One validated event, built into the memory it will be stored as."""

    memory: Memory
    external_id: str | None


@dataclass(frozen=True)
class Committed:
    """What one write batch returns: the memory for every event (the stored one for a ``source_id``
    already known) and the memories that are new."""

    memories: list[Memory]
    new: list[Memory]


class MemoryService:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    # -- record ------------------------------------------------------------------------------------
    def prepare(
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
    ) -> Prepared:
        """Validate one event and build its memory; raises before anything is written."""
        cfg = self.ctx.config
        if index is not None and not isinstance(index, bool):
            raise InvalidInputError(f"index must be a bool or None, got {type(index).__name__}")
        text = check_text(content, max_chars=cfg.write.max_content_chars)
        layer_ = check_layer(layer)
        if layer_ not in PERSISTENT_LAYERS:
            raise InvalidInputError(
                f"layer {layer_.value!r} is not stored: record episodes (the default) or semantic/procedural memories"
            )
        kind_ = check_kind(kind)
        session = check_session_id(session_id)
        role = check_role(role, max_chars=cfg.write.max_role_chars)
        if source_id is not None:
            source_id = check_text(source_id, what="source_id", max_chars=500)
        meta = check_metadata(metadata, max_depth=cfg.write.max_metadata_depth, max_bytes=cfg.write.max_metadata_bytes)
        level = check_importance(cfg.write.default_importance if importance is None else importance)
        when = now if occurred_at is None else aware(occurred_at, what="occurred_at")
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
            activation=activation_math.initial(
                level, min(to_ts(when), to_ts(now)),
                initial_log=cfg.activation.initial_log, importance_weight=cfg.activation.importance_weight,
            ),
            source_id=source_id if isinstance(source_id, str) else None,
            entities=extract_entities(text),
            fingerprint=fingerprint(text),
            indexed=not (layer_ == Layer.EPISODIC and is_small_talk(text)) if index is None else index,
            metadata=meta,
        )
        return Prepared(memory, source_id if isinstance(source_id, str) else None)

    def prepare_events(self, events: object, namespace: str, *, start: int = 0) -> list[Prepared]:
        """Validate a bulk import, every event before the first is written (``start``: the index of the
        first event in a larger import, for messages)."""
        if isinstance(events, str | bytes | Mapping) or not isinstance(events, Iterable):
            raise InvalidInputError(f"events must be an iterable of events, got {type(events).__name__}")
        now = self.ctx.now()
        prepared: list[Prepared] = []
        for index, raw in enumerate(events, start):
            try:
                event = Event(content=raw) if isinstance(raw, str) else Event.model_validate(raw)
            except Exception as exc:
                raise InvalidInputError(f"event {index} is malformed: {exc}") from exc
            try:
                prepared.append(
                    self.prepare(
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
        return prepared

    def commit(self, namespace: str, prepared: Sequence[Prepared]) -> Committed:
        """Durably insert (skipping ids already imported under the same ``source_id``) with outbox rows in
        the same transaction; then try to bring the indexes in step at once."""
        with self.ctx.changes() as ch:
            by_layer: dict[Layer, list[str]] = {}
            for p in prepared:
                if p.external_id is not None:
                    by_layer.setdefault(p.memory.layer, []).append(p.external_id)
            existing = {
                (layer, key): m
                for layer, keys in by_layer.items()
                for key, m in ch.tx.by_external_ids(namespace, layer.value, keys).items()
            }
            fresh: list[Prepared] = []
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
            ch.insert([p.memory for p in fresh], [p.external_id for p in fresh])
        return Committed(result, [p.memory for p in fresh])

    def upsert(self, namespace: str, prepared: Prepared) -> tuple[Memory, bool]:
        """Insert ``prepared`` or rewrite the memory holding its key; returns the stored memory and
        whether it is new. Two writers of one new key can both find it absent and both insert: the unique
        index on (namespace, layer, external_id) refuses the second, which then tries again and finds the
        first."""
        return self._replace(namespace, prepared)

    @retry(retry=retry_if_exception_type(ConstraintConflict), stop=stop_after_attempt(3), reraise=True)
    def _replace(self, namespace: str, p: Prepared) -> tuple[Memory, bool]:
        assert p.external_id is not None
        layer = p.memory.layer.value
        with self.ctx.changes() as ch:
            existing = ch.tx.by_external_ids(namespace, layer, [p.external_id]).get(p.external_id)
            if existing is None:
                ch.insert([p.memory], [p.external_id])
                ch.synced.append(p.memory.id)  # applied like a replace, indexed or not
                return p.memory, True
            memory = p.memory.model_copy(
                update={"id": existing.id, "created_at": existing.created_at, "access_count": existing.access_count}
            )
            ch.update([memory])
            # The cached vector is keyed by memory id: left alone it would index the old text.
            ch.tx.drop_embeddings([memory.id])
            return memory, False

    # -- read --------------------------------------------------------------------------------------
    def get(self, memory_id: str, *, namespace: str | None = None) -> Memory | None:
        memory_id = check_id(memory_id)
        if namespace is None:
            return self.ctx.store.get(memory_id)
        return self.ctx.store.get_many_in(check_namespace(namespace), [memory_id]).get(memory_id)

    def working(self, namespace: str, session_id: str, *, budget_tokens: int | None = None) -> list[Memory]:
        namespace = check_namespace(namespace)
        session = check_session_id(session_id)
        assert session is not None
        budget = self.ctx.config.write.working_budget_tokens if budget_tokens is None else budget_tokens
        window: list[Memory] = []
        used = 0
        for m in self.ctx.store.session_tail(namespace, session, limit=500):
            cost = self.ctx.tokens.count(m.content)
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
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        metadata: Mapping[str, object] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Memory]:
        namespace = check_namespace(namespace)
        status_: str | None = None
        if status is not None:
            try:
                status_ = Status(status).value
            except ValueError:
                raise InvalidInputError(f"unknown status {status!r}") from None
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidInputError(f"limit must be a positive int or None, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError(f"offset must be an int >= 0, got {offset!r}")
        after = None if created_after is None else to_ts(aware(created_after, what="created_after"))
        before = None if created_before is None else to_ts(aware(created_before, what="created_before"))
        filters = None if metadata is None else check_metadata_filter(metadata)
        keys: list[str] | None = None
        if source_ids is not None:
            if isinstance(source_ids, str | bytes) or not isinstance(source_ids, Iterable):
                raise InvalidInputError("source_ids must be a sequence of str")
            keys = list(dict.fromkeys(check_text(k, what="source_ids item", max_chars=500) for k in source_ids))
        return self.ctx.store.find_memories(
            namespace, session_id=check_session_id(session_id),
            layer=None if layer is None else check_layer(layer).value,
            kind=None if kind is None else check_kind(kind).value, status=status_, external_ids=keys,
            created_after=after, created_before=before, metadata=filters, limit=limit, offset=offset,
        )

    # -- edit --------------------------------------------------------------------------------------
    def update(self, memory_id: str, text: str, *, namespace: str | None = None) -> Memory:
        """Rewrite one memory's text in one unit of work: the edit noted in ``memory_history`` (with the
        old text's vector), the row rewritten, the cached vector dropped and index work queued, so the
        commit carries everything that makes the new text the one recall finds (the change log tells
        recall's snapshot). The same text again changes nothing."""
        memory_id = check_id(memory_id)
        scope = None if namespace is None else check_namespace(namespace)
        content = check_text(text, max_chars=self.ctx.config.write.max_content_chars)
        now = self.ctx.now()
        model = self.ctx.embedder.name
        with self.ctx.changes() as ch:
            current = ch.tx.get(memory_id) if scope is None else ch.tx.get_many_in(scope, [memory_id]).get(memory_id)
            if current is None:
                where = "" if scope is None else f" in namespace {scope!r}"
                raise MemoryNotFoundError(f"no memory {memory_id!r}{where}")
            if current.content == content:
                return current
            old_vector = ch.tx.get_embeddings(model, [memory_id]).get(memory_id)
            ch.tx.add_history(memory_id, current.namespace, current.content, content, to_ts(now), model, old_vector)
            updated = current.model_copy(update={
                "content": content, "fingerprint": fingerprint(content), "entities": extract_entities(content),
                "updated_at": now,
            })
            ch.update([updated])
            # The cached vector is keyed by memory id: left alone it would index the old text.
            ch.tx.drop_embeddings([memory_id])
        return updated

    def history(self, memory_id: str, *, namespace: str | None = None) -> MemoryHistory:
        """The memory's edits, its supersedes chain both ways and its demotions, oldest first."""
        memory = self.get(memory_id, namespace=namespace)
        if memory is None:
            where = "" if namespace is None else f" in namespace {namespace!r}"
            raise MemoryNotFoundError(f"no memory {memory_id!r}{where}")
        store = self.ctx.store
        edits = [MemoryEdit(old_content=old, new_content=new, at=from_ts(at))
                 for old, new, at in store.history(memory.id)]
        older: list[ChainLink] = []
        seen = {memory.id}
        frontier = [memory.id]
        while frontier:  # what this memory replaced, and what those replaced, ...
            links = [e for mid in frontier for e in store.edges(mid, kind=EdgeKind.SUPERSEDES) if e.dst not in seen]
            found = store.get_many_in(memory.namespace, [e.dst for e in links])
            older += [ChainLink(memory=found[e.dst], at=e.created_at) for e in links if e.dst in found]
            seen |= set(found)
            frontier = list(found)
        newer: list[ChainLink] = []
        current = [memory]
        while current:  # what replaced this memory, and what replaced that, ...
            following: list[Memory] = []
            for m in current:
                incoming = [(e.src, e.created_at) for e in store.edges(m.id, kind=EdgeKind.SUPERSEDES, direction="in")]
                if not incoming and m.superseded_by:  # an episode that followed its fact has no edge of its own
                    incoming = [(m.superseded_by, m.updated_at)]
                incoming = [(mid, at) for mid, at in incoming if mid not in seen]
                found = store.get_many_in(memory.namespace, [mid for mid, _ in incoming])
                for mid, at in incoming:
                    if mid in found and mid not in seen:
                        newer.append(ChainLink(memory=found[mid], at=at))
                        seen.add(mid)
                        following.append(found[mid])
            current = following
        older.sort(key=lambda link: (link.at, link.memory.id))
        newer.sort(key=lambda link: (link.at, link.memory.id))
        demoted = [
            MemoryDemotion(at=from_ts(d.demoted_at), by=d.demoted_by, reason=d.reason,
                           reinstated_at=None if d.reinstated_at is None else from_ts(d.reinstated_at))
            for d in demotions.of_memory(store, memory.id)
        ]
        return MemoryHistory(memory=memory, edits=edits, supersedes=older, superseded_by=newer, demotions=demoted)

    def sensory(self, namespace: str, session_id: str | None = None) -> Memory | None:
        """The session's latest event (``session_id=None``: the latest recorded with no session), read
        from the store: one index seek. It was a map held by the process, one memory per session it had
        ever recorded (about 3 KB each: 15 MB for 1,000 users of 5 sessions, and growing for as long as
        the process ran), that another process's turns and a restart left behind."""
        latest = self.ctx.store.session_tail(check_namespace(namespace), check_session_id(session_id), 1, kind=None)
        return latest[0] if latest else None

    def has_namespace(self, namespace: str) -> bool:
        return self.ctx.store.has_namespace(namespace)

    def check_known(self, namespace: str | None) -> str | None:
        """``namespace`` validated; one that holds no memories raises."""
        if namespace is None:
            return None
        namespace = check_namespace(namespace)
        if not self.ctx.store.has_namespace(namespace):
            raise UnknownNamespaceError(f"namespace {namespace!r} holds no memories")
        return namespace

    # -- erase -------------------------------------------------------------------------------------
    def erase(self, ch: Changes, namespace: str, seeds: Sequence[str], *, archived: bool = False) -> list[str]:
        """Erase ``seeds`` and what was distilled only from them, in the caller's unit of work; returns
        the ids. ``archived`` seeds are no longer in the store (their records leave the archive file):
        they get tombstones and leave the logs and other memories' provenance all the same."""
        stored, rewritten = closure(ch.tx, namespace, seeds)
        ids = [mid for mid, _ in stored]
        if not ids and not archived:  # erased by another caller between the read and the transaction
            return []
        gone = list(dict.fromkeys([*seeds, *ids])) if archived else ids
        erase(ch.tx, namespace, gone, rewritten, ch.ts)
        ch.sync_ids((mid, namespace, layer) for mid, layer in stored)
        return gone

    def purge(self, ch: Changes, namespace: str) -> int:
        """Erase the namespace from every table in the caller's unit of work (tombstones stay) and queue
        the indexes' purge; returns how many memories."""
        ids = purge_namespace(ch.tx, namespace, ch.ts)
        ch.purge(namespace)
        return len(ids)

    def subtree(self, root: str) -> list[str]:
        """The namespaces of ``root``'s subtree that hold rows (root first)."""
        return subtree_namespaces(self.ctx.store, root)

    # -- figures -----------------------------------------------------------------------------------
    def stats(self, namespace: str | None) -> Stats:
        """Counts per namespace, layer and status, and the outbox's state."""
        store = self.ctx.store
        stats = Stats(outbox_pending=store.pending_count())
        parked = store.parked()
        stats.outbox_parked = len(parked)
        stats.outbox_errors = [
            ParkedWork(memory_id=mid, target=target, op=op, attempts=attempts, error=error)
            for _, mid, target, op, attempts, error in parked[:100]
        ]
        for ns, layer, status, indexed, count in store.memory_counts(namespace):
            ns_stats = stats.namespaces.setdefault(ns, NamespaceStats())
            layer_stats = ns_stats.layers.setdefault(layer, LayerStats())
            layer_stats.by_status[status] = layer_stats.by_status.get(status, 0) + count
            if indexed and status == Status.ACTIVE.value:
                layer_stats.indexed += count
            stats.total += count
        return stats


__all__ = ["Committed", "MemoryService", "Prepared"]
