"""The embedder protocol. Vectors are L2-normalised float32, so a dot product is a cosine."""

from __future__ import annotations

from collections.abc import Sequence
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
