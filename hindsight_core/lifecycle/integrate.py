"""Integration of extracted memories into a namespace (docs/architecture.md, "Lifecycle").

For each extracted memory, in order: exact duplicate (same fingerprint) or same slot and value →
reinforce the existing memory and add the new sources; same exclusive slot with a new value, an explicit
change, or an LLM ``supersedes`` → the newer memory supersedes the older (kept, status ``superseded``,
activation cut); an assistant confirmation with nothing to confirm → dropped; near-duplicate (same kind,
cosine over the threshold) → reinforce; otherwise a new memory. Every change of one batch is written in
one transaction, so a batch is either integrated whole or not at all."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
from ulid import ULID

from hindsight_core.activation import math as activation_math
from hindsight_core.activation.math import reinforced, scaled
from hindsight_core.clock import to_ts
from hindsight_core.lifecycle.schema import ExtractedMemory
from hindsight_core.recall import sentence_kinds
from hindsight_core.recall.keyword import tokenize
from hindsight_core.sharing import writable_by
from hindsight_core.store import jobs
from hindsight_core.text.clauses import clauses
from hindsight_core.text.entities import extract_entities
from hindsight_core.text.normalize import fingerprint, normalize
from hindsight_core.types import AGENT_ROLES, Edge, EdgeKind, Kind, Layer, Memory, Status
from hindsight_core.write.outbox import ACTIVATION, TARGETS

if TYPE_CHECKING:
    from hindsight_core.context import Changes, EngineContext
    from hindsight_core.store.sql import RelationalStore


def without_value(text: str, value: str) -> str | None:
    """``text`` with every occurrence of ``value`` (any case) replaced by "…"; ``None`` when ``value`` is
    empty or not in ``text``."""
    if not value.strip():
        return None
    pattern = re.compile(re.escape(value.strip()), re.IGNORECASE)
    rest, count = pattern.subn("…", text)
    return rest if count else None


def procedure_content(trigger: str, steps: Sequence[str]) -> str:
    return f"{trigger.strip()} → " + " ".join(f"{i}. {s.strip()}" for i, s in enumerate(steps, 1))


@dataclass
class BatchPlan:
    new: dict[str, Memory] = field(default_factory=dict)
    updated: dict[str, Memory] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    consolidated: list[str] = field(default_factory=list)
    #: Ids whose vector-index entry changes (new, or leaving the index); the rest changed activation only.
    vector_sync: set[str] = field(default_factory=set)
    merged: int = 0
    superseded: int = 0
    episodes_superseded: int = 0
    dropped: int = 0
    superseded_ids: list[str] = field(default_factory=list)
    #: New memories of items the extractor marked general: what ``commit`` promotes (sharing.py).
    general: list[str] = field(default_factory=list)
    #: ``(shared namespace, id)`` of the copies ``commit`` wrote.
    promoted: list[tuple[str, str]] = field(default_factory=list)


class Integrator:
    """State of one consolidation run over a namespace: the active semantic and procedural memories
    (the *pool*), who cites which episode, and their vectors."""

    def __init__(self, ctx: EngineContext, extractor_name: str, namespace: str) -> None:
        self.ctx = ctx
        self.extractor_name = extractor_name
        self.namespace = namespace
        self.config = ctx.config.lifecycle
        rows = ctx.store.find_memories(
            namespace, layer=(Layer.SEMANTIC.value, Layer.PROCEDURAL.value), status=Status.ACTIVE.value
        )
        self.pool: dict[str, Memory] = {m.id: m for m in rows}
        self.citers: dict[str, set[str]] = defaultdict(set)
        for m in rows:
            for source in m.source_ids:
                self.citers[source].add(m.id)
        self._vectors: dict[str, np.ndarray] | None = None
        #: The vectors of the user's turns read for starting memories: each episode once per batch, however
        #: many facts it gave.
        self._turn_vectors: dict[str, np.ndarray] = {}
        self._embedded: dict[str, np.ndarray] = {}
        self._turns: dict[str, list[Memory]] = {}  # session id -> its episodes in write order (echoes)

    # -- helpers ---------------------------------------------------------------------------------
    def existing(self) -> list[Memory]:
        return list(self.pool.values())

    def prime(self, items: Sequence[ExtractedMemory]) -> None:
        """Embed the contents of ``items`` not embedded yet, in one call (the embedder's per-call cost
        dominates for the few short memories a batch yields)."""
        missing = list(dict.fromkeys(c for c in map(self._content, items) if c not in self._embedded))
        if missing:
            vectors = self.ctx.embedder.embed_documents(missing)
            for content, vector in zip(missing, vectors, strict=True):
                self._embedded[content] = np.asarray(vector, dtype=np.float32)

    def _pool_vectors(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            indexed = [m for m in self.pool.values() if m.indexed]
            self._vectors = dict(self.ctx.outbox.vectors_for(indexed)) if indexed else {}
        return self._vectors

    def _rate(self, layer: Layer) -> float:
        return self.ctx.config.activation.rate(layer)

    def _current(self, plan: BatchPlan, memory_id: str) -> Memory | None:
        return plan.new.get(memory_id) or plan.updated.get(memory_id) or self.pool.get(memory_id)

    def _touch(self, plan: BatchPlan, m: Memory) -> None:
        if m.id in plan.new:
            plan.new[m.id] = m
        else:
            plan.updated[m.id] = m
        if m.status == Status.ACTIVE and m.layer in (Layer.SEMANTIC, Layer.PROCEDURAL):
            self.pool[m.id] = m
        else:
            self.pool.pop(m.id, None)

    # -- the rules -------------------------------------------------------------------------------
    def integrate(self, batch: Sequence[Memory], items: Sequence[ExtractedMemory], now: datetime) -> BatchPlan:
        plan = BatchPlan(consolidated=[e.id for e in batch])
        episodes = {e.id: e for e in batch}
        ts = to_ts(now)
        usable = [i for i in items if any(s in episodes for s in i.source_ids)]
        usable.sort(key=lambda i: max(episodes[s].occurred_at for s in i.source_ids if s in episodes))
        self.prime(usable)
        for item in usable:
            content = self._content(item)
            self._integrate_one(plan, item, content, self._embedded[content], episodes, now, ts)
        # Distilled episodes lose some weight (and keep it out of the ranking they no longer need).
        factor = self.config.consolidated_episode_factor
        for episode_id in plan.consolidated:
            current = plan.updated.get(episode_id) or episodes[episode_id]
            if factor < 1.0:
                current = current.model_copy(update={"activation": scaled(current.activation, factor)})
            plan.updated[episode_id] = current
        return plan

    @staticmethod
    def _content(item: ExtractedMemory) -> str:
        if item.kind == "procedure" and item.trigger and item.steps:
            return procedure_content(item.trigger, item.steps)
        return item.content.strip()

    def _integrate_one(
        self,
        plan: BatchPlan,
        item: ExtractedMemory,
        content: str,
        vector: np.ndarray,
        episodes: dict[str, Memory],
        now: datetime,
        ts: float,
    ) -> None:
        cited = [episodes[s] for s in item.source_ids if s in episodes]
        sources = list(dict.fromkeys(e.id for e in cited))
        layer = Layer.PROCEDURAL if item.kind == "procedure" else Layer.SEMANTIC
        kind = Kind(item.kind)
        fp = fingerprint(content)
        value_key = normalize(item.value) if item.value is not None else None
        # A starting memory (a template's, starting.py) is never the user's evidence: what the user states
        # that repeats it, restates its slot or is close to it is a memory of their own that replaces it.
        starting: list[Memory] = []
        # 1. exact duplicate
        for p in list(self.pool.values()):
            if p.layer == layer and p.fingerprint == fp:
                if p.starting:
                    starting.append(p)
                    continue
                self._reinforce(plan, p, sources, cited, item, now, ts)
                return
        # 2. same slot: duplicate or conflict
        targets: list[Memory] = []
        if item.slot:
            same = [p for p in self.pool.values() if p.metadata.get("slot") == item.slot]
            for p in same:
                if normalize(str(p.metadata.get("value", ""))) == value_key:
                    if p.starting:
                        starting.append(p)
                        continue
                    self._reinforce(plan, p, sources, cited, item, now, ts)
                    return
            if item.corroborates:  # an assistant confirms; it never changes a value
                pass
            elif same and item.exclusive:
                targets = same
            elif same and item.change:
                targets = self._changed(same, item)
        targets += [self.pool[i] for i in item.supersedes if i in self.pool and self.pool[i] not in targets]
        # 3. near-duplicate (same kind, close in embedding space, not a different value of one slot)
        if not targets:
            best, best_id = -1.0, None
            vectors = self._pool_vectors()
            for p in self.pool.values():
                if p.kind != kind or p.id not in vectors:
                    continue
                if item.slot and p.metadata.get("slot") and p.metadata.get("slot") != item.slot:
                    continue
                similarity = float(vectors[p.id] @ vector)
                if p.starting:
                    if similarity >= self.config.near_duplicate_threshold and p not in starting:
                        starting.append(p)
                    continue
                if similarity > best:
                    best, best_id = similarity, p.id
            if best_id is not None and best >= self.config.near_duplicate_threshold:
                self._reinforce(plan, self.pool[best_id], sources, cited, item, now, ts)
                return
        if item.corroborates:
            plan.dropped += 1
            return
        # 4. a new memory
        occurred = max(e.occurred_at for e in cited)
        level = item.importance
        act = self.ctx.config.activation
        metadata: dict[str, Any] = {"extractor": self.extractor_name, "mentions": 1}
        if item.slot:
            metadata.update(slot=item.slot, value=item.value)
        if item.kind == "procedure":
            metadata.update(
                trigger=item.trigger,
                steps=list(item.steps or []),
                confidence=self.config.procedure_initial_confidence,
            )
        memory = Memory(
            id=str(ULID.from_datetime(now)),
            namespace=self.namespace,
            session_id=cited[-1].session_id,
            layer=layer,
            kind=kind,
            role=None,
            content=content,
            occurred_at=occurred,
            created_at=now,
            updated_at=now,
            importance=level,
            activation=activation_math.initial(
                level, min(to_ts(occurred), ts), initial_log=act.initial_log, importance_weight=act.importance_weight
            ),
            source_ids=sources,
            entities=list(dict.fromkeys([*item.entities, *extract_entities(content)]))[:12],
            fingerprint=fp,
            expires_at=occurred + timedelta(days=self.config.state_ttl_days) if kind == Kind.STATE else None,
            metadata=metadata,
        )
        plan.new[memory.id] = memory
        plan.vectors[memory.id] = vector
        plan.vector_sync.add(memory.id)
        if item.general:
            plan.general.append(memory.id)
        plan.edges += [Edge(src=memory.id, dst=e.id, kind=EdgeKind.DERIVED_FROM, created_at=now) for e in cited]
        for source in sources:
            self.citers[source].add(memory.id)
        self.pool[memory.id] = memory
        if self._vectors is not None:
            self._vectors[memory.id] = vector
        targets += [p for p in starting if p not in targets]
        if self.ctx.config.recall.supersede and any(p.starting for p in self.pool.values()):
            from hindsight_core.recall.floor import anchor_threshold
            from hindsight_core.starting import attribute_z

            vectors = self._pool_vectors()
            # the user's own word on a starting memory's attribute replaces it (starting.py): the starting
            # memory closest to what the user said, if close enough. Measured on the user's own turns the
            # fact was distilled from, not on the fact: a distilled fact and a template share their framing
            # ("The user is a backend engineer", "The user is a beginner."), which stood above the bar for
            # nearly any pair, and the recall path measures the user's turns too
            said = [e for e in cited if e.indexed and (e.role or "").lower() not in AGENT_ROLES]
            if unread := [e for e in said if e.id not in self._turn_vectors]:
                self._turn_vectors.update((mid, np.asarray(v, dtype=np.float32))
                                          for mid, v in self.ctx.outbox.vectors_for(unread).items())
            turns = [(e.content, self._turn_vectors[e.id]) for e in said if e.id in self._turn_vectors]
            scored = [(max(attribute_z(self.ctx.embedder, vectors[p.id], turn, p.content, text)
                           for text, turn in turns), p)
                      for p in self.pool.values() if p.starting and p.id in vectors and turns]
            if scored:
                z, closest = max(scored, key=lambda zp: zp[0])
                if z >= anchor_threshold(self.ctx.config.recall, len(scored)) and closest not in targets:
                    targets.append(closest)
        for old in targets:
            if old.starting:  # whenever the user said it, their word replaces the template's
                self._supersede(plan, self._current(plan, old.id) or old, memory, now)
            elif old.occurred_at > memory.occurred_at:  # consolidated late: the stored value is the newer one
                self._supersede(plan, self._current(plan, memory.id) or memory, old, now)
            else:
                self._supersede(plan, self._current(plan, old.id) or old, memory, now)

    def _changed(self, same: list[Memory], item: ExtractedMemory) -> list[Memory]:
        """Which value an explicit change ("migrated from MySQL to PostgreSQL") replaces."""
        if item.change_from:
            wanted = normalize(item.change_from)
            return [p for p in same if wanted and (wanted in normalize(str(p.metadata.get("value", ""))))]
        values = [str(p.metadata.get("value", "")) for p in same]
        vectors = self.ctx.embedder.embed_documents([item.value or "", *values])
        similarities = vectors[1:] @ vectors[0]
        return [same[int(np.argmax(similarities))]]

    def _reinforce(
        self,
        plan: BatchPlan,
        target: Memory,
        sources: list[str],
        cited: list[Memory],
        item: ExtractedMemory,
        now: datetime,
        ts: float,
    ) -> None:
        current = self._current(plan, target.id) or target
        merged_sources = list(dict.fromkeys([*current.source_ids, *sources]))
        metadata = dict(current.metadata)
        metadata["mentions"] = int(metadata.get("mentions", 1)) + 1
        rate = self._rate(current.layer)
        update: dict[str, Any] = {
            "source_ids": merged_sources,
            "metadata": metadata,
            "updated_at": now,
            "importance": max(current.importance, item.importance),
            "activation": reinforced(current.activation, rate, ts, self.config.reinforce_weight),
        }
        latest = max(e.occurred_at for e in cited)
        if latest > current.occurred_at:
            update["occurred_at"] = latest
            if current.kind == Kind.STATE:
                update["expires_at"] = latest + timedelta(days=self.config.state_ttl_days)
        updated = current.model_copy(update=update)
        self._touch(plan, updated)
        for source in sources:
            self.citers[source].add(updated.id)
        plan.edges += [Edge(src=updated.id, dst=e.id, kind=EdgeKind.DERIVED_FROM, created_at=now) for e in cited]
        if not item.corroborates:
            plan.merged += 1

    def _supersede(self, plan: BatchPlan, old: Memory, new: Memory, now: datetime) -> None:
        """``new`` replaces ``old``: old kept for history, out of the indexes, activation × factor; the
        episodes only ``old`` cited carry the stale value too and follow it."""
        if old.status == Status.SUPERSEDED:
            return
        factor = self.config.superseded_factor
        self._touch(
            plan,
            old.model_copy(
                update={
                    "status": Status.SUPERSEDED,
                    "superseded_by": new.id,
                    "updated_at": now,
                    "activation": scaled(old.activation, factor),
                }
            ),
        )
        plan.vector_sync.add(old.id)
        plan.edges.append(Edge(src=new.id, dst=old.id, kind=EdgeKind.SUPERSEDES, created_at=now))
        plan.superseded += 1
        plan.superseded_ids.append(old.id)
        for source in old.source_ids:
            self.citers[source].discard(old.id)
        stale = [s for s in old.source_ids if not self.citers.get(s)]
        if not stale:
            return
        known = {
            **self.ctx.store.get_many_in(self.namespace, (s for s in stale if s not in plan.updated)),
            **{s: plan.updated[s] for s in stale if s in plan.updated},
        }
        for source in stale:
            episode = known.get(source)
            if (
                episode is None
                or episode.layer != Layer.EPISODIC
                or episode.namespace != self.namespace
                or episode.status not in (Status.ACTIVE, Status.COLD)
            ):
                continue
            plan.updated[episode.id] = episode.model_copy(
                update={
                    "status": Status.SUPERSEDED,
                    "superseded_by": new.id,
                    "updated_at": now,
                }
            )
            plan.vector_sync.add(episode.id)
            plan.episodes_superseded += 1
            self._keep_the_rest(plan, episode, old, now)
            echo = self._echo(episode, str(old.metadata.get("value") or ""))
            if echo is not None and echo.id not in plan.updated and echo.id not in old.source_ids:
                plan.updated[echo.id] = echo.model_copy(
                    update={"status": Status.SUPERSEDED, "superseded_by": new.id, "updated_at": now}
                )
                plan.vector_sync.add(echo.id)
                plan.episodes_superseded += 1

    def _echo(self, episode: Memory, value: str) -> Memory | None:
        """The agent's echo of a stale value ("Physio in Manchester, great."): the next turn of the
        session, the agent's, repeating the value. It carries the stale value too, and no fact cites it."""
        if not value.strip() or episode.session_id is None:
            return None
        if episode.session_id not in self._turns:
            self._turns[episode.session_id] = self.ctx.store.find_memories(
                self.namespace, session_id=episode.session_id, layer=Layer.EPISODIC.value
            )
        turns = self._turns[episode.session_id]
        at = next((i for i, m in enumerate(turns) if m.id == episode.id), None)
        if at is None or at + 1 >= len(turns):
            return None
        reply = turns[at + 1]
        if ((reply.role or "").lower() not in AGENT_ROLES or reply.status not in (Status.ACTIVE, Status.COLD)
                or self.citers.get(reply.id) or without_value(reply.content, value) is None):
            return None
        return reply

    def _keep_the_rest(self, plan: BatchPlan, episode: Memory, old: Memory, now: datetime) -> None:
        """An episode retired for a value that changed may have said more: "I live in Manchester and I'm a
        physiotherapist" loses the city, not the job. What the person said besides the old value stays
        recallable as a fact drawn from the episode, with the old value cut out ("I live in … and I'm a
        physiotherapist"); the episode itself, which carries the stale value, is no longer shown. Nothing
        is kept when the value cannot be found in the episode's words or when no clause without it says
        something (:meth:`_says_more`); the agent's turns never originate a memory."""
        if (episode.role or "").lower() in AGENT_ROLES:
            return
        value = str(old.metadata.get("value") or "")
        rest = without_value(episode.content, value)
        if rest is None or not self._says_more(episode.content, value):
            return
        act = self.ctx.config.activation
        memory = Memory(
            id=str(ULID.from_datetime(now)),
            namespace=self.namespace,
            session_id=episode.session_id,
            layer=Layer.SEMANTIC,
            kind=Kind.FACT,
            content=rest,
            occurred_at=episode.occurred_at,
            created_at=now,
            updated_at=now,
            importance=episode.importance,
            activation=activation_math.initial(
                episode.importance, to_ts(episode.occurred_at), initial_log=act.initial_log,
                importance_weight=act.importance_weight,
            ),
            source_ids=[episode.id],
            entities=extract_entities(rest)[:12],
            fingerprint=fingerprint(rest),
            metadata={"extractor": self.extractor_name, "mentions": 1, "rest_of": episode.id},
        )
        vector = self.ctx.embedder.embed_documents([rest])[0]
        plan.new[memory.id] = memory
        plan.vectors[memory.id] = vector
        plan.vector_sync.add(memory.id)
        plan.edges.append(Edge(src=memory.id, dst=episode.id, kind=EdgeKind.DERIVED_FROM, created_at=now))
        self.citers[episode.id].add(memory.id)
        self.pool[memory.id] = memory
        if self._vectors is not None:
            self._vectors[memory.id] = vector

    def _says_more(self, text: str, value: str) -> bool:
        """Whether ``text`` has a clause without ``value`` that says something: "I live in Manchester and
        I'm a physiotherapist" does; "我们这个项目的预算上限是3万元。" (one clause, holding the value) and
        "Hi, I live in Lisbon." (the other clause is small talk, ``SentenceKinds.content_free``) do not."""
        others = [c for c in clauses(text) if value.strip().lower() not in c.lower() and tokenize(c)]
        if not others:
            return False
        kinds = sentence_kinds.for_embedder(self.ctx.embedder)
        return bool((kinds.content_free(self.ctx.embedder.embed_documents(others)) <= 0.0).any())

    # -- write -----------------------------------------------------------------------------------
    def commit(self, plan: BatchPlan, job_id: int | None, now: datetime) -> None:
        ts = to_ts(now)
        with self.ctx.changes() as ch:
            tx = ch.tx
            self._drop_erased(plan, tx)
            ids = [*plan.new, *plan.updated]
            if plan.new:
                tx.insert_memories(list(plan.new.values()))
            for m in plan.updated.values():
                tx.update_memory(m)
            ch.add_edges(plan.edges)
            if plan.vectors:
                tx.put_embeddings(self.ctx.embedder.name, plan.vectors)
            if plan.consolidated:
                jobs.mark_consolidated(tx, self.namespace, plan.consolidated, job_id, ts)
            # a memory whose vector entry does not change (reinforced, scaled) needs its activation key only
            for mid in ids:
                targets = TARGETS if mid in plan.vector_sync else (ACTIVATION,)
                ch.sync_ids([(mid, self.namespace, self._layer_of(plan, mid))], targets)
            self._promote(ch, plan, now)

    def _promote(self, ch: Changes, plan: BatchPlan, now: datetime) -> None:
        """Copies of the batch's new general facts (``ExtractedMemory.general``) into every shared
        namespace this namespace may write to (a grant with ``write``, read in this unit of work, so a
        fact is promoted exactly when it is written and never after a revocation committed before it).
        A copy cites no episode (``source_ids`` never cross namespaces, and the shared namespace must not
        hold the conversation): ``metadata["promoted_from"]`` says where it came from, the namespace, the
        memory and the episodes it was distilled from. A shared namespace whose active memories hold the
        same text already gets nothing; the copy starts as a new memory there, with its own activation."""
        general = [plan.new[mid] for mid in plan.general
                   if mid in plan.new and plan.new[mid].status == Status.ACTIVE]
        if not general:
            return
        for shared in writable_by(ch.tx, self.namespace):
            held = ch.tx.active_fingerprints(shared, [m.fingerprint for m in general])
            copies: dict[str, Memory] = {}
            for m in general:
                if m.fingerprint in held:
                    continue
                held.add(m.fingerprint)
                bookkeeping = {k: v for k, v in m.metadata.items() if k not in ("extractor", "mentions")}
                copies[m.id] = m.model_copy(update={
                    "id": str(ULID.from_datetime(now)), "namespace": shared, "session_id": None, "source_ids": [],
                    "metadata": {**bookkeeping, "extractor": self.extractor_name, "mentions": 1,
                                 "promoted_from": {"namespace": self.namespace, "memory_id": m.id,
                                                   "source_ids": list(m.source_ids)}},
                })
            if copies:
                ch.insert(list(copies.values()))
                ch.tx.put_embeddings(self.ctx.embedder.name,
                                     {c.id: plan.vectors[mid] for mid, c in copies.items() if mid in plan.vectors})
                plan.promoted += [(shared, c.id) for c in copies.values()]

    def _drop_erased(self, plan: BatchPlan, tx: RelationalStore) -> bool:
        """Take out of ``plan`` what was erased (``forget``) while the batch was being extracted: the
        erased episodes, their place in other memories' sources, and new memories drawn only from them
        (an erase must not come back as a fact). Returns whether anything was taken out."""
        from hindsight_core.store.erase import erased_among

        mentioned = [*plan.consolidated, *plan.updated, *(s for m in plan.new.values() for s in m.source_ids)]
        mentioned += [s for m in plan.updated.values() for s in m.source_ids]
        gone = erased_among(tx, mentioned)
        if not gone:
            return False
        for mid, m in list(plan.new.items()):
            sources = [s for s in m.source_ids if s not in gone]
            if sources:
                plan.new[mid] = m.model_copy(update={"source_ids": sources})
            else:
                gone.add(mid)
                del plan.new[mid]
                plan.vectors.pop(mid, None)
                self.pool.pop(mid, None)
        # an update in gone is erased; one superseded by a dropped memory keeps its stored state
        for mid in [mid for mid, m in plan.updated.items() if mid in gone or m.superseded_by in gone]:
            del plan.updated[mid]
            plan.vector_sync.discard(mid)
            self.pool.pop(mid, None)
        for mid, m in list(plan.updated.items()):
            if any(s in gone for s in m.source_ids):
                plan.updated[mid] = m.model_copy(update={"source_ids": [s for s in m.source_ids if s not in gone]})
        plan.consolidated = [mid for mid in plan.consolidated if mid not in gone]
        plan.edges = [e for e in plan.edges if e.src not in gone and e.dst not in gone]
        plan.vector_sync -= gone
        return True

    @staticmethod
    def _layer_of(plan: BatchPlan, memory_id: str) -> str:
        m = plan.new.get(memory_id) or plan.updated[memory_id]
        return m.layer.value
