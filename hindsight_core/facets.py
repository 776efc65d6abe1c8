"""The hooks through which the engine's facets (recall, lifecycle) join the write side.

Each facet is a mixin of :class:`hindsight_core.Hindsight`; each hook calls ``super()`` so every facet
sees it. The attributes below are what a facet may use of the core."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight_core.activation.base import ActivationIndex
    from hindsight_core.config import HindsightConfig
    from hindsight_core.embeddings.base import Embedder
    from hindsight_core.store.sql import RelationalStore
    from hindsight_core.text.tokens import TokenCounter
    from hindsight_core.types import Memory, NamespaceStats
    from hindsight_core.vectors.base import VectorIndex
    from hindsight_core.write.outbox import OutboxApplier


class Facet:
    store: RelationalStore
    vectors: VectorIndex
    activation: ActivationIndex
    embedder: Embedder
    tokens: TokenCounter
    config: HindsightConfig
    outbox: OutboxApplier

    def now(self) -> datetime:
        raise NotImplementedError

    def _init_facets(self, **options: Any) -> None:
        """Called at the end of ``Hindsight.__init__`` with the keyword arguments the core did not take."""
        if options:
            raise TypeError(f"Hindsight() got unexpected keyword arguments: {sorted(options)}")

    def _on_recorded(self, namespace: str, memories: list[Memory]) -> None:
        """After new episodes are durable and indexed."""

    def _holds_namespace(self, namespace: str) -> bool:
        """Whether the facet keeps anything of a namespace outside the ``memories`` table (an archive
        file, a transcript): such a namespace is known, and ``forget_namespace`` must reach it."""
        return False

    def _forget_namespace_extra(self, namespace: str) -> None:
        """Inside the ``forget_namespace`` transaction: delete facet-owned rows of the namespace."""

    def _erase(self, namespace: str, seeds: Sequence[str], *, archived: bool = False) -> list[str]:
        raise NotImplementedError

    def _forget_archived(self, memory_id: str, namespace: str | None) -> bool:
        """``forget`` of a memory that is not in the store: a facet that keeps memories elsewhere (the
        archive) erases it there. Returns whether it found it."""
        return False

    def _forget_memories_extra(self, namespace: str, ids: list[str]) -> None:
        """Inside the ``forget`` transaction: drop what the facet holds of these erased memories."""

    def _after_forget_namespace(self, namespace: str) -> None:
        """After the ``forget_namespace`` transaction committed: delete facet-owned files, which cannot
        roll back with the database."""

    def _extend_stats(self, namespace: str, stats: NamespaceStats) -> None:
        """Add facet figures to a namespace's stats."""

    def _close_facets(self) -> None:
        """Stop facet workers before the stores close."""
