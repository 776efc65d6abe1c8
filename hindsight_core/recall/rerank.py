"""Stage 4, optional cross-encoder reranking of the fused top N.

``FlagReranker`` loads any BGE reranker by hub name or a local directory; FlagEmbedding is imported
only when one is configured (it takes seconds). Without a reranker the stage passes scores through."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from hindsight_core.optional import require


@runtime_checkable
class Reranker(Protocol):
    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Relevance of each passage to the query, in [0, 1], higher is better."""
        ...


class FlagCrossEncoder:
    def __init__(self, name_or_path: str, *, device: str = "cpu", max_length: int = 512) -> None:
        flag = require("FlagEmbedding", "bge")
        self.name = name_or_path
        self._model: Any = flag.FlagReranker(
            name_or_path, use_fp16=False, devices=device, max_length=max_length, normalize=True
        )
        self._lock = threading.Lock()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        with self._lock:
            raw = self._model.compute_score([(query, p) for p in passages], normalize=True)
        values = raw if isinstance(raw, list) else [raw]
        return [float(v) for v in values]


def resolve_reranker(reranker: Reranker | str | None) -> Reranker | None:
    if reranker is None or isinstance(reranker, Reranker):
        return reranker
    return FlagCrossEncoder(str(reranker))


def rerank(
    reranker: Reranker | None, query: str, ordered: Sequence[tuple[str, str]], top_n: int
) -> dict[str, float] | None:
    """Scores for the first ``top_n`` of ``ordered`` (``(memory_id, text)``), or ``None`` to pass through."""
    if reranker is None or not ordered:
        return None
    head = list(ordered[:top_n])
    scores = reranker.score(query, [text for _, text in head])
    return {memory_id: s for (memory_id, _), s in zip(head, scores, strict=True)}
