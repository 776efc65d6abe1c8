"""Read-only views for the operator's tools (the CLI, the inspector) beyond the engine's user API: a
namespace's newest or fading memories, a memory's neighbours in the graph, the recalls that injected it,
the outbox backlog. The tools read through here and never through the store (a test keeps them so), so
what they may see is decided in one place: every view takes a namespace, or a memory whose namespace
bounds what it returns; only :meth:`Inspection.memories` also reads across the store, for a report of a
run over every namespace (a sweep's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hindsight_core.clock import to_ts
from hindsight_core.types import PERSISTENT_LAYERS, Edge, EdgeKind, Kind, Layer, Memory, Status
from hindsight_core.validation import check_id, check_kind, check_layer, check_namespace, check_session_id

if TYPE_CHECKING:
    from hindsight_core.context import EngineContext

_DAY = 86_400.0


def _status(status: Status | str | None) -> str | None:
    from hindsight_core.errors import InvalidInputError

    if status is None:
        return None
    try:
        return Status(status).value
    except ValueError:
        raise InvalidInputError(f"unknown status {status!r}") from None


class Inspection:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    def latest(
        self, namespace: str, *, limit: int, layer: Layer | str | None = None, kind: Kind | str | None = None,
        status: Status | str | None = None, session_id: str | None = None,
    ) -> list[Memory]:
        """The namespace's newest memories matching exact attributes, oldest of them first."""
        return self.store.latest(
            check_namespace(namespace), limit=limit, layer=None if layer is None else check_layer(layer).value,
            kind=None if kind is None else check_kind(kind).value, status=_status(status),
            session_id=check_session_id(session_id),
        )

    def search(
        self, namespace: str, *, text: str | None = None, layer: Layer | str | None = None,
        status: Status | str | None = None, limit: int = 200,
    ) -> list[Memory]:
        """The namespace's memories whose text contains ``text`` (all without it), newest first."""
        return self.store.search_memories(
            check_namespace(namespace), text=text, layer=None if layer is None else check_layer(layer).value,
            status=_status(status), limit=limit,
        )

    def held(self, memories: Iterable[Memory]) -> set[str]:
        """Ids of ``memories`` the sweep never makes cold: pinned ones and current standing facts
        (``lifecycle/standing.py``)."""
        from hindsight_core.lifecycle.standing import held

        return held(self.ctx, list(memories))

    def fading(self, namespace: str, days: float, *, limit: int = 200) -> list[Memory]:
        """What the sweep makes cold within ``days`` if nothing recalls it, lowest activation now first
        (pinned memories and current standing facts never fade)."""
        namespace = check_namespace(namespace)
        cfg = self.ctx.config
        now = to_ts(self.ctx.now())
        found: list[Memory] = []
        for layer in PERSISTENT_LAYERS:
            rate = cfg.activation.rate(layer)
            if rate > 0:
                found += self.store.fading(
                    namespace, layer.value, rate=rate, at=now + days * _DAY, cold_log=cfg.lifecycle.cold_log_activation,
                    idle_s=cfg.lifecycle.cold_idle_days * _DAY, limit=limit,
                )
        kept = self.held(found)
        return sorted(
            (m for m in found if m.id not in kept),
            key=lambda m: m.activation.log_at(now, cfg.activation.rate(m.layer)),
        )[:limit]

    def memories(self, namespace: str | None, ids: Iterable[str]) -> dict[str, Memory]:
        """Those of ``ids`` that are memories of the namespace, by id (ids of other namespaces are left
        out); ``None``: of any namespace."""
        checked = [check_id(i) for i in ids]
        if namespace is None:
            return self.store.get_many(checked)
        return self.store.get_many_in(check_namespace(namespace), checked)

    def sources(self, memory: Memory) -> list[Memory]:
        """What a distilled memory was drawn from, in its ``source_ids`` order (erased ones are missing)."""
        found = self.memories(memory.namespace, memory.source_ids)
        return [found[i] for i in memory.source_ids if i in found]

    def cited_by(self, memory: Memory) -> list[Memory]:
        """The distilled memories that cite this one as a source."""
        ids = [e.src for e in self.store.edges(memory.id, kind=EdgeKind.DERIVED_FROM, direction="in")]
        return list(self.memories(memory.namespace, ids).values())

    def edges(self, memory: Memory) -> list[Edge]:
        """Every edge from and to the memory (edges never cross namespaces)."""
        return self.store.edges(memory.id, direction="out") + self.store.edges(memory.id, direction="in")

    def injections(self, memory: Memory) -> list[tuple[float, float]]:
        """``(time, relevance)`` of each logged recall that injected the memory, oldest first; relevance is
        its score over that recall's best, what reinforcement adds."""
        return self.store.injections(memory.namespace, memory.id)

    def indexed_count(self) -> int:
        """How many active memories the indexes hold, over every namespace."""
        return len(self.store.indexed_active_ids())

    def pending_index_work(self) -> int:
        """Outbox rows not applied yet (parked ones aside): writes the indexes do not show yet."""
        return self.store.pending_count()


__all__ = ["Inspection"]
