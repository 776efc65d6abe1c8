"""Starting memories: what a new user begins with, so the first recall is not empty.

A template (:class:`~hindsight_core.types.StartingMemories`: memories given as a JSONL file or a list
of strings and dicts, or the active semantic memories of a template namespace) is written into a new
user's root namespace on first use: the first ``record``, ``record_many``, ``upsert`` or ``recall`` in
the root or below it, or :meth:`Hindsight.apply_starting_memories`. Each is a semantic memory whose
``metadata["starting"]`` names the template (``Memory.starting``), with no ``source_ids``: it is not the
user's evidence.

*Once per root.* One unit of work inserts a row for the root into ``starting_memories``
(``store/starting.py``, primary key on the root) and the memories; a second writer, in this process or
another one sharing the store, finds the row and writes nothing. A root that already holds memories is
not a new user: the row is written with none applied, and it never gets the template.

*The user's word wins.* Consolidation never reinforces a starting memory or adds a source to it: a
fact the user states that repeats it, restates its slot or was distilled from turns of the user's close
to it (``attribute_z`` at ``floor.anchor_threshold``) replaces it through the ordinary ``supersedes`` path
(``lifecycle/integrate.py``), whatever the times. Closeness is measured on the user's turns, not on the
distilled fact: a fact and a template item share their framing ("The user is a backend engineer", "The
user is a beginner."), and that alone put nearly any pair above the bar. Recall hands a starting
memory's place to the user's own memory on the same attribute (the same bar), takes
``recall.starting_penalty`` off its score and does not reinforce it (``recall/pipeline.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from ulid import ULID

from hindsight_core.activation import math as activation_math
from hindsight_core.clock import to_ts
from hindsight_core.context import EngineContext
from hindsight_core.embeddings.base import Embedder
from hindsight_core.namespaces import SEPARATOR, within
from hindsight_core.starting_template import (
    KINDS,
    StartingMemories,
    StartingMemory,
)
from hindsight_core.store import starting as rows
from hindsight_core.text.entities import extract_entities
from hindsight_core.text.normalize import fingerprint
from hindsight_core.text.script import is_cjk
from hindsight_core.types import STARTING, Kind, Layer, Memory, Status

#: Metadata consolidation keeps for itself; not copied from a template namespace's memories.
_BOOKKEEPING = ("extractor", "mentions", STARTING)

def root_of(namespace: str) -> str:
    """The root namespace of ``namespace`` (``user:ana`` for ``user:ana/store:memories``)."""
    return namespace.split(SEPARATOR, 1)[0]


_backgrounds: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}


def attribute_z(embedder: Embedder, u: np.ndarray, v: np.ndarray, u_text: str, v_text: str) -> float:
    """How many standard deviations the cosine of two memories stands above each one's cosines to
    unrelated background sentences of its language (the mean of both directions, as recall-time updates
    measure it): a high value says they speak of the same attribute. Consolidation's test of whether the
    user's turns a new fact was distilled from replace a starting memory (``floor.anchor_threshold``),
    recall's being the same."""
    from hindsight_core.recall.floor import baseline, split_background

    key = (embedder.name, embedder.dim)
    if key not in _backgrounds:
        english, chinese = split_background()
        _backgrounds[key] = (embedder.embed_documents(english), embedder.embed_documents(chinese))
    english_bg, chinese_bg = _backgrounds[key]
    cosine = float(u @ v)
    side_u = baseline(u, chinese_bg if is_cjk(u_text) else english_bg).z(cosine)
    side_v = baseline(v, chinese_bg if is_cjk(v_text) else english_bg).z(cosine)
    return float((side_u + side_v) / 2)


class StartingService:
    """Applies a template to new roots, once each (see the module docstring)."""

    def __init__(self, ctx: EngineContext, template: StartingMemories | None = None) -> None:
        self.ctx = ctx
        self.template = template
        #: Roots known to be decided, so a use after the first costs no query.
        self._decided: set[str] = set()

    def applies_to(self, root: str, template: StartingMemories) -> bool:
        if template.prefix is not None and not root.startswith(template.prefix):
            return False
        return template.namespace is None or not within(root, template.namespace)

    def first_use(self, namespace: str, template: StartingMemories | None = None) -> list[Memory]:
        """Apply ``template`` (default: the engine's) to ``namespace``'s root if nobody has yet; returns
        the memories written (none when the root was decided before, by anyone)."""
        template = template or self.template
        root = root_of(namespace)
        if template is None or root in self._decided or not self.applies_to(root, template):
            return []
        if rows.decided(self.ctx.store, root) is not None:
            self._decided.add(root)
            return []
        model = self.ctx.embedder.name
        with self.ctx.changes() as ch:
            now = self.ctx.now()
            if not rows.claim(ch.tx, root, at=ch.ts, template=template.label):
                memories: list[Memory] = []
            elif ch.tx.namespaces_under(root):  # not a new user: history of their own already
                memories = []
            else:
                memories, vectors = self._build(ch.tx, root, template, now, model)
                ch.insert(memories)
                if vectors:
                    ch.tx.put_embeddings(model, vectors)
                rows.applied(ch.tx, root, len(memories))
        self._decided.add(root)
        return memories

    def forget(self, namespace: str) -> None:
        """The root was purged: deciding it again is the store's to say."""
        self._decided.discard(root_of(namespace))

    def _build(
        self, tx: Any, root: str, template: StartingMemories, now: Any, model: str
    ) -> tuple[list[Memory], dict[str, Any]]:
        items: list[tuple[StartingMemory, list[str], str | None]] = [(m, [], None) for m in template.memories]
        if template.namespace is not None:
            found = tx.find_memories(template.namespace, layer=Layer.SEMANTIC.value, status=Status.ACTIVE.value)
            for m in found:
                if m.starting:  # what the template namespace itself started with is nobody's to copy
                    continue
                meta = {k: v for k, v in m.metadata.items() if k not in _BOOKKEEPING and k not in ("slot", "value")}
                value = m.metadata.get("value")
                item = StartingMemory.model_construct(
                    content=m.content, kind=m.kind if m.kind in KINDS else Kind.FACT, importance=m.importance,
                    slot=m.metadata.get("slot"), value=None if value is None else str(value), metadata=meta,
                )
                items.append((item, m.entities, m.id if m.indexed else None))
        act = self.ctx.config.activation
        ts = to_ts(now)
        memories: list[Memory] = []
        copied: dict[str, str] = {}
        for item, entities, origin in items:
            metadata: dict[str, Any] = {**item.metadata, STARTING: template.label}
            if item.slot:
                metadata.update(slot=item.slot, value=item.value)
            memory = Memory(
                id=str(ULID.from_datetime(now)), namespace=root, layer=Layer.SEMANTIC, kind=item.kind, role=None,
                content=item.content, occurred_at=now, created_at=now, updated_at=now, importance=item.importance,
                activation=activation_math.initial(
                    item.importance, ts, initial_log=act.initial_log, importance_weight=act.importance_weight
                ),
                entities=list(dict.fromkeys([*entities, *extract_entities(item.content)]))[:12],
                fingerprint=fingerprint(item.content), metadata=metadata,
            )
            memories.append(memory)
            if origin is not None:
                copied[memory.id] = origin
        # a template namespace's vectors are reused: the same text, the same embedder
        cached = tx.get_embeddings(model, list(copied.values())) if copied else {}
        vectors = {mid: cached[origin] for mid, origin in copied.items() if origin in cached}
        return memories, vectors


__all__ = ["StartingService", "attribute_z", "root_of"]
