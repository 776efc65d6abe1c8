"""A deterministic embedder without a model, for tests and benchmarks (as ``DeterministicFakeEmbedding``
is in LangChain): the same text gives the same vector in every process, and texts sharing words are
close, as with a real model, at a cost of microseconds, so a benchmark measures the engine and a test
of storage or indexing needs no model."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from hindsight_core.embeddings.base import normalise

#: Distinct word directions; a larger vocabulary shares them, which only adds a little noise.
_DIRECTIONS = 4096


class HashedWordEmbedder:
    """Each word picks one of 4,096 fixed random directions (by a stable hash of the word); a text is
    the normalised sum of its words'."""

    def __init__(self, dim: int = 384, name: str | None = None) -> None:
        self.dim = dim
        self.name = name or f"hashed-words-{dim}"
        table = np.random.default_rng(7).standard_normal((_DIRECTIONS, dim)).astype(np.float32)
        self._table = table / np.linalg.norm(table, axis=1, keepdims=True)
        self._ids: dict[str, int] = {}

    def _word(self, word: str) -> int:
        found = self._ids.get(word)
        if found is None:
            found = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little") % _DIRECTIONS
            self._ids[word] = found
        return found

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = [self._table[[self._word(w) for w in t.lower().split()] or [0]].sum(axis=0) for t in texts]
        return normalise(np.stack(rows)).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
