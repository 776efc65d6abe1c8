"""The recall facet of the engine (``Hindsight.recall``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hindsight_core.clock import aware
from hindsight_core.errors import InvalidInputError
from hindsight_core.facets import Facet
from hindsight_core.types import PERSISTENT_LAYERS, Layer, Memory, NamespaceStats
from hindsight_core.validation import check_layer, check_namespace, check_session_id, check_text

if TYPE_CHECKING:
    from hindsight_core.recall.pipeline import RecallPipeline
    from hindsight_core.recall.rerank import Reranker
    from hindsight_core.recall.types import RecallResult

MAX_K = 200
MAX_QUERY_CHARS = 4_000


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


class RecallMixin(Facet):
    _recall_pipeline: RecallPipeline | None
    _recall_reranker: Reranker | str | None

    def _init_facets(self, **options: Any) -> None:
        self._recall_reranker = options.pop("reranker", None)
        self._recall_pipeline = None
        self._recall_lock = threading.Lock()
        super()._init_facets(**options)

    def _pipeline(self) -> RecallPipeline:
        with self._recall_lock:
            if self._recall_pipeline is None:
                from hindsight_core.recall.pipeline import RecallPipeline
                from hindsight_core.recall.rerank import resolve_reranker

                self._recall_pipeline = RecallPipeline(
                    store=self.store, vectors=self.vectors, activation=self.activation, embedder=self.embedder,
                    tokens=self.tokens, config=self.config, outbox=self.outbox,
                    reranker=resolve_reranker(self._recall_reranker or self.config.recall.reranker),
                    now=self.now,
                )
            return self._recall_pipeline

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
    ) -> RecallResult:
        """The memories worth injecting for ``query``, ranked and packed into ``budget_tokens``.

        An irrelevant query returns no hits (``to_prompt()`` is then ""), a namespace with no memories
        an empty result; malformed input raises :class:`InvalidInputError` before anything runs.
        ``explain=True`` fills ``result.trace`` with every stage's view (an inspector's question "why
        this memory?"); ``track=False`` writes no recall log and reinforces nothing, so a look at what
        recall would inject leaves the memory as it was."""
        text = check_text(query, what="query", max_chars=MAX_QUERY_CHARS)
        namespace = check_namespace(namespace)
        session = check_session_id(session_id)
        cfg = self.config.recall
        k_ = _check_positive(cfg.default_k if k is None else k, "k", MAX_K)
        budget = _check_positive(
            cfg.default_budget_tokens if budget_tokens is None else budget_tokens, "budget_tokens", 1_000_000
        )
        searched = check_layers(layers)
        when = self.now() if now is None else aware(now, what="now")
        for flag, value in (("include_cold", include_cold), ("explain", explain), ("track", track)):
            if not isinstance(value, bool):
                raise InvalidInputError(f"{flag} must be a bool")
        return self._pipeline().run(
            text, namespace, session_id=session, k=k_, budget_tokens=budget, layers=searched, now=when,
            include_cold=include_cold, explain=explain, track=track,
        )

    async def arecall(self, query: str, namespace: str, **kwargs: Any) -> RecallResult:
        return await asyncio.to_thread(self.recall, query, namespace, **kwargs)

    def flush_recall_log(self) -> int:
        """Write buffered recall-log rows and reinforcements now; returns how many memories were reinforced."""
        pipeline = self._recall_pipeline
        if pipeline is None:
            return 0
        pipeline.drain()
        return pipeline.recorder.flush()

    # -- facet hooks -----------------------------------------------------------------------------
    def _on_recorded(self, namespace: str, memories: list[Memory]) -> None:
        super()._on_recorded(namespace, memories)

    def _forget_namespace_extra(self, namespace: str) -> None:
        super()._forget_namespace_extra(namespace)
        if self._recall_pipeline is not None:
            self._recall_pipeline.recorder.drop_namespace(namespace)
            self._recall_pipeline.corpora.invalidate(namespace)

    def _forget_memories_extra(self, namespace: str, ids: list[str]) -> None:
        super()._forget_memories_extra(namespace, ids)
        if self._recall_pipeline is not None:
            self._recall_pipeline.recorder.drop_memories(ids)
            self._recall_pipeline.corpora.invalidate(namespace)

    def _extend_stats(self, namespace: str, stats: NamespaceStats) -> None:
        super()._extend_stats(namespace, stats)
        from hindsight_core.recall.log import health

        self.flush_recall_log()
        health(self.store, namespace, stats)

    def _close_facets(self) -> None:
        pipeline = self._recall_pipeline
        if pipeline is not None:
            try:
                pipeline.close()
            finally:
                self._recall_pipeline = None
        super()._close_facets()
