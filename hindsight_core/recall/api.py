"""The recall service of the engine (``Hindsight.recall``): input checks, then the pipeline."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from hindsight_core.clock import aware
from hindsight_core.config import RecallConfig
from hindsight_core.errors import InvalidInputError
from hindsight_core.types import PERSISTENT_LAYERS, SHARED_LAYERS, Layer, NamespaceStats
from hindsight_core.validation import MAX_QUERY_CHARS, check_layer, check_namespace, check_session_id, check_text

if TYPE_CHECKING:
    from hindsight_core.context import EngineContext
    from hindsight_core.recall.pipeline import RecallPipeline
    from hindsight_core.recall.rerank import Reranker
    from hindsight_core.recall.snapshot_file import SnapshotFiles
    from hindsight_core.recall.types import RecallResult

MAX_K = 200


def check_layers(layers: object) -> tuple[Layer, ...]:
    if layers is None:
        return PERSISTENT_LAYERS
    if isinstance(layers, str | Layer):
        layers = [layers]
    if not isinstance(layers, Sequence | set | frozenset) or not layers:
        raise InvalidInputError("layers must be None or a non-empty list of layer names")
    out: list[Layer] = []
    for raw in layers:
        layer = check_layer(raw)
        if layer not in PERSISTENT_LAYERS:
            raise InvalidInputError(
                f"layer {layer.value!r} is not searchable: recall searches {[v.value for v in PERSISTENT_LAYERS]}"
            )
        if layer not in out:
            out.append(layer)
    return tuple(out)


def _check_positive(value: object, what: str, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise InvalidInputError(f"{what} must be an int from 1 to {limit}, got {value!r}")
    return value


class RecallService:
    """Recall over the engine's context. The pipeline (and its models) is built on first use, so an
    engine that only writes never loads a reranker."""

    def __init__(self, ctx: EngineContext, reranker: Reranker | str | None = None,
                 snapshot_files: SnapshotFiles | None = None) -> None:
        self.ctx = ctx
        self._reranker = reranker
        #: Where snapshots are kept between processes (``None``: in memory only; see snapshot_file.py).
        self.snapshot_files = snapshot_files
        #: The pipeline once built (``None`` before the first recall and after close).
        self.built: RecallPipeline | None = None
        self._lock = threading.Lock()

    def _pipeline(self) -> RecallPipeline:
        with self._lock:
            if self.built is None:
                from hindsight_core.recall.pipeline import RecallPipeline
                from hindsight_core.recall.rerank import resolve_reranker

                ctx = self.ctx
                self.built = RecallPipeline(
                    store=ctx.store, vectors=ctx.vectors, activation=ctx.activation, embedder=ctx.embedder,
                    tokens=ctx.tokens, config=ctx.config, outbox=ctx.outbox,
                    reranker=resolve_reranker(self._reranker or ctx.config.recall.reranker),
                    now=ctx.now, changes=ctx.changes, snapshot_files=self.snapshot_files,
                )
            return self.built

    def recall(
        self,
        query: str,
        namespace: str,
        *,
        session_id: str | None = None,
        k: int | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[Layer | str] | None = None,
        now: datetime | None = None,
        include_cold: bool = False,
        explain: bool = False,
        track: bool = True,
        as_of: datetime | None = None,
        subtree: bool = False,
        first_use: Callable[[str], object] | None = None,
        config: RecallConfig | None = None,
        shared: bool = True,
        shared_with: Callable[[str], list[str]] | None = None,
    ) -> RecallResult:
        """``first_use(namespace)`` runs once the arguments are checked, before anything is read: the
        engine's starting memories for a new user (not for a read-only recall, ``track=False`` or ``as_of``).
        ``shared_with(namespace)`` names the shared namespaces granted to it (sharing.py), searched in
        their shared layers beside the namespace's own unless ``shared`` is false."""
        text = check_text(query, what="query", max_chars=MAX_QUERY_CHARS)
        namespace = check_namespace(namespace)
        session = check_session_id(session_id)
        if config is not None and not isinstance(config, RecallConfig):
            raise InvalidInputError(f"config must be a RecallConfig, not {type(config).__name__}")
        cfg = config or self.ctx.config.recall
        k_ = _check_positive(cfg.default_k if k is None else k, "k", MAX_K)
        budget = _check_positive(
            cfg.default_budget_tokens if budget_tokens is None else budget_tokens, "budget_tokens", 1_000_000
        )
        searched = check_layers(layers)
        at = None if as_of is None else aware(as_of, what="as_of")
        when = (self.ctx.now() if at is None else at) if now is None else aware(now, what="now")
        flags = (("include_cold", include_cold), ("explain", explain), ("track", track), ("subtree", subtree),
                 ("shared", shared))
        for flag, value in flags:
            if not isinstance(value, bool):
                raise InvalidInputError(f"{flag} must be a bool")
        if first_use is not None and track and at is None:
            first_use(namespace)
        namespaces = [namespace]
        if subtree:
            namespaces = self.ctx.store.namespaces_under(namespace) or [namespace]
            if len(namespaces) > cfg.max_subtree_namespaces:
                raise InvalidInputError(
                    f"namespace {namespace!r} has {len(namespaces)} namespaces in its subtree, over "
                    f"config.recall.max_subtree_namespaces={cfg.max_subtree_namespaces}: recall a narrower "
                    "root, or raise the limit"
                )
        granted = shared_with(namespace) if shared and shared_with is not None else []
        pipeline = self._pipeline()
        try:
            return pipeline.run(
                text, namespaces, session_id=session, k=k_, budget_tokens=budget, layers=searched, now=when,
                include_cold=include_cold, explain=explain, track=track, root=namespace, as_of=at, config=config,
                shared=granted, shared_layers=tuple(layer for layer in searched if layer in SHARED_LAYERS),
            )
        finally:
            pipeline.load_indexes()

    def warm_up(self) -> None:
        """Build the pipeline and load what its first run would (see ``Hindsight.warm_up``)."""
        self._pipeline().warm_up()

    def flush_log(self) -> int:
        """Write buffered recall-log rows and reinforcements now; returns how many memories were reinforced."""
        pipeline = self.built
        if pipeline is None:
            return 0
        pipeline.drain()
        return pipeline.recorder.flush()

    # -- what the engine sequences around other services' writes ------------------------------------
    def invalidate(self, namespace: str | None) -> None:
        """Rows written behind the pipeline's back (an import), or vectors replaced (``reembed``; ``None``:
        every namespace): the snapshots are stale, in memory and on disk."""
        if self.snapshot_files is not None:
            self.snapshot_files.remove(namespace)
        if self.built is not None:
            self.built.corpora.invalidate(namespace)

    def discard_memories(self, namespace: str, ids: list[str]) -> None:
        """Erased memories: drop what is buffered of them and the namespace's snapshot, whose file holds
        their ids and vectors (inside the erase's unit of work)."""
        if self.snapshot_files is not None:
            self.snapshot_files.remove(namespace)
        if self.built is not None:
            self.built.recorder.drop_memories(ids)
            self.built.corpora.invalidate(namespace)

    def purge(self, namespace: str) -> None:
        """A namespace is erased (inside the purge's unit of work, whose store purge takes its log rows):
        drop its buffered log rows and its snapshot, file included."""
        if self.snapshot_files is not None:
            self.snapshot_files.remove(namespace)
        if self.built is not None:
            self.built.recorder.drop_namespace(namespace)
            self.built.corpora.invalidate(namespace)

    def extend_stats(self, namespace: str, stats: NamespaceStats) -> None:
        from hindsight_core.recall.log import health

        self.flush_log()
        health(self.ctx.store, namespace, stats)

    def close(self) -> None:
        pipeline = self.built
        if pipeline is not None:
            try:
                pipeline.close()
            finally:
                self.built = None


__all__ = ["MAX_K", "RecallService", "check_layers"]
