"""Pure pydantic data types shared by every part of the engine and the adapters.

They carry no behaviour that touches a backend, so adapters and tests can build and compare them freely.
"""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Layer(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


#: Layers whose memories are stored durably and indexed (working memory and sensory memory, the last
#: event recorded, are views of episodes: neither has rows of its own).
PERSISTENT_LAYERS: tuple[Layer, ...] = (Layer.EPISODIC, Layer.SEMANTIC, Layer.PROCEDURAL)
#: Roles (lower-cased) of the agent's side of a conversation: what it says restates or answers, it is not
#: the user's testimony (consolidation does not take facts from it; its echo of a turn is that turn).
AGENT_ROLES: frozenset[str] = frozenset({"assistant", "ai", "bot", "agent", "system", "tool", "model"})


class Kind(StrEnum):
    TURN = "turn"
    EVENT = "event"
    FACT = "fact"
    PREFERENCE = "preference"
    STATE = "state"
    PROCEDURE = "procedure"


class Status(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    COLD = "cold"


class EdgeKind(StrEnum):
    SUPERSEDES = "supersedes"
    DERIVED_FROM = "derived_from"


class Activation(BaseModel):
    """Activation in log space: ``A(t) = exp(log_base) * exp(-rate * (t - ref_time))``.

    Keeping ``log_base`` (not ``A_ref``) avoids underflow for memories idle for years.
    """

    model_config = ConfigDict(frozen=True)

    log_base: float = 0.0
    ref_time: float = 0.0  # unix seconds

    def log_at(self, now: float, rate: float) -> float:
        return self.log_base - rate * (now - self.ref_time)

    def value_at(self, now: float, rate: float) -> float:
        return math.exp(self.log_at(now, rate))


#: Metadata flag that keeps a memory from fading out: the sweep never makes it cold or archives it (it
#: still decays in ranking). Key/value items set it, because an application reads them back by key.
PINNED = "pinned"
#: Metadata flag of a starting memory (``Hindsight(starting_memories=...)``): written from a template for a
#: new user, not said by them. Its value names the template. The user's own statements replace it, it is
#: never reinforced as their evidence and never a source of what consolidation distils.
STARTING = "starting"


class Memory(BaseModel):
    """One memory, in any layer.

    Two kinds of id, kept apart because mixing them let a caller's string resolve to another tenant's
    memory: ``source_id`` is the caller's own id given to ``record(source_id=...)`` (an idempotency key,
    never interpreted), ``source_ids`` is internal provenance — ids of memories of the same namespace a
    distilled memory was drawn from (never empty for a consolidated memory)."""

    model_config = ConfigDict(use_enum_values=False)

    id: str
    namespace: str
    session_id: str | None = None
    layer: Layer = Layer.EPISODIC
    kind: Kind = Kind.TURN
    role: str | None = None
    content: str
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    importance: int = Field(default=3, ge=1, le=5)
    activation: Activation = Field(default_factory=Activation)
    access_count: int = 0
    source_ids: list[str] = Field(default_factory=list)
    source_id: str | None = None
    entities: list[str] = Field(default_factory=list)
    fingerprint: str = ""
    status: Status = Status.ACTIVE
    superseded_by: str | None = None
    expires_at: datetime | None = None
    indexed: bool = True
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def pinned(self) -> bool:
        return bool(self.metadata.get(PINNED))

    @property
    def starting(self) -> bool:
        """Whether this is a starting memory from a template, not something the user said."""
        return bool(self.metadata.get(STARTING))


class Edge(BaseModel):
    model_config = ConfigDict(frozen=True)

    src: str
    dst: str
    kind: EdgeKind
    created_at: datetime


class MemoryEdit(BaseModel):
    """One ``update()``: the text before and after, and when."""

    model_config = ConfigDict(frozen=True)

    old_content: str
    new_content: str
    at: datetime


class ChainLink(BaseModel):
    """A memory on the other side of a ``supersedes`` link, and when that link was made."""

    memory: Memory
    at: datetime


class MemoryDemotion(BaseModel):
    """One ``demote()``: when, by whom and why, and when it was undone (``None`` while it holds)."""

    model_config = ConfigDict(frozen=True)

    at: datetime
    by: str | None = None
    reason: str | None = None
    reinstated_at: datetime | None = None


#: The layers a grant shares (sharing.py): what was learned (facts, preferences, procedures), never the
#: conversation (episodic and working memory).
SHARED_LAYERS: tuple[Layer, ...] = (Layer.SEMANTIC, Layer.PROCEDURAL)


class Grant(BaseModel):
    """A grant: ``grantee`` (a namespace, and the namespaces below it) recalls the semantic and
    procedural memories of the shared ``namespace`` beside its own (``Hindsight.grant``); with ``write``,
    the grantee's consolidation also promotes the facts its extractor marks general into it."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    grantee: str
    granted_at: datetime
    write: bool = False


class MemoryHistory(BaseModel):
    """What ``history(memory_id)`` returns, every list oldest first: the memory as it is now, its edits,
    the memories it superseded (directly or along the chain), those that superseded it, and its
    demotions (``demote`` / ``reinstate``)."""

    memory: Memory
    edits: list[MemoryEdit] = Field(default_factory=list)
    supersedes: list[ChainLink] = Field(default_factory=list)
    superseded_by: list[ChainLink] = Field(default_factory=list)
    demotions: list[MemoryDemotion] = Field(default_factory=list)

    @property
    def demoted(self) -> bool:
        """Whether a demotion holds now (``reinstate`` undoes it)."""
        return any(d.reinstated_at is None for d in self.demotions)

    def text_at(self, when: datetime) -> str | None:
        """The memory's text at ``when``; ``None`` before it was created."""
        if when < self.memory.created_at:
            return None
        later = [e for e in self.edits if e.at > when]
        return later[0].old_content if later else self.memory.content


class Event(BaseModel):
    """One item for :meth:`Hindsight.record_many`; the fields mirror ``record``'s arguments."""

    content: str
    session_id: str | None = None
    role: str | None = "user"
    occurred_at: datetime | None = None
    source_id: str | None = None
    metadata: dict[str, Any] | None = None
    layer: Layer | str = Layer.EPISODIC
    kind: Kind | str = Kind.TURN
    importance: int | None = None


class LayerStats(BaseModel):
    by_status: dict[str, int] = Field(default_factory=dict)
    indexed: int = 0


class NamespaceStats(BaseModel):
    layers: dict[str, LayerStats] = Field(default_factory=dict)
    consolidation_jobs: dict[str, int] = Field(default_factory=dict)
    recall_hit_rate: float | None = None
    recall_idle_rate: float | None = None
    recall_coverage: float | None = None


class ParkedWork(BaseModel):
    """Outbox work that failed on its own too often; ``reconcile()`` retries it."""

    memory_id: str | None
    target: str
    op: str
    attempts: int
    error: str | None = None


class WorkerStatus(BaseModel):
    """One running ``hindsight worker`` as its last heartbeat described it (see ``store/workers.py``)."""

    model_config = ConfigDict(extra="allow")
    owner: str
    host: str = ""
    pid: int = 0
    started_at: float = 0.0
    heartbeat_at: float = 0.0
    #: What it was doing: ``idle``, ``draining the outbox``, ``consolidating <namespace>``, ``sweeping``...
    state: str = ""
    passes: int = 0
    outbox_applied: int = 0
    consolidations: int = 0
    episodes_consolidated: int = 0
    memories_created: int = 0
    sweeps: int = 0
    last_error: str | None = None


class Stats(BaseModel):
    namespaces: dict[str, NamespaceStats] = Field(default_factory=dict)
    outbox_pending: int = 0
    total: int = 0
    #: Parked outbox rows (not counted in ``outbox_pending``) and, for the first 100, what failed.
    outbox_parked: int = 0
    outbox_errors: list[ParkedWork] = Field(default_factory=list)
    #: The ``hindsight worker`` processes serving this data set, with their progress.
    workers: list[WorkerStatus] = Field(default_factory=list)
