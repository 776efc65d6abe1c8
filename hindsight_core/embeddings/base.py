"""The embedder protocol. Vectors are L2-normalised float32, so a dot product is a cosine."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    #: Identifies the vector space; stored next to every vector so a model change is detected.
    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """``(dim,)`` float32, normalised; may differ from a document vector (e5 and BGE use prefixes)."""
        ...


def normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


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
