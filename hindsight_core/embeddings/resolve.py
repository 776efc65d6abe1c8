"""Which embedder an engine gets for what the caller passed: the one place that knows the
implementations (the protocol in ``base.py`` knows none of them)."""

from __future__ import annotations

from pathlib import Path

from hindsight_core.embeddings.base import Embedder


def resolve_embedder(embedder: Embedder | str | Path | None) -> Embedder:
    """``None`` → the bundled multilingual-e5-small; a string or path → a FlagEmbedding model; a
    LangChain ``Embeddings`` or LlamaIndex ``BaseEmbedding`` → wrapped (``embeddings/foreign.py``)."""
    if embedder is None or embedder in ("e5", "multilingual-e5-small"):
        from hindsight_core.embeddings.e5 import E5Embedder

        return E5Embedder()
    if isinstance(embedder, str | Path):
        from hindsight_core.embeddings.flag import FlagEmbedder

        return FlagEmbedder(str(embedder))
    if not isinstance(embedder, Embedder):
        from hindsight_core.embeddings.foreign import FrameworkEmbedder, framework_of

        if framework_of(embedder) is not None:  # a LangChain Embeddings or a LlamaIndex BaseEmbedding
            return FrameworkEmbedder(embedder)
        raise TypeError(f"embedder must implement the Embedder protocol, got {type(embedder).__name__}")
    return embedder
