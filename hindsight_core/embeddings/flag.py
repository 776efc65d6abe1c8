"""Any BGE-family model by hub name (``BAAI/bge-small-zh-v1.5``) or local path, through FlagEmbedding.

FlagEmbedding takes seconds to import, so it loads only when such a model is configured."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hindsight_core.embeddings.base import normalise
from hindsight_core.optional import require

_MEAN_POOLED = ("minilm", "all-mpnet", "sentence-transformers/")


class FlagEmbedder:
    """``pooling_method`` defaults to CLS (BGE) and to mean for sentence-transformers models such as
    MiniLM, whose vectors are wrong under CLS pooling."""

    def __init__(
        self,
        name_or_path: str,
        *,
        pooling_method: str | None = None,
        query_instruction: str | None = None,
        batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        self.name = f"flag/{Path(name_or_path).name if Path(name_or_path).exists() else name_or_path}"
        self._source = name_or_path
        if pooling_method is None:
            lowered = name_or_path.lower()
            pooling_method = "mean" if any(tag in lowered for tag in _MEAN_POOLED) else "cls"
        if query_instruction is None and "bge" in name_or_path.lower() and "zh" in name_or_path.lower():
            query_instruction = "为这个句子生成表示以用于检索相关文章："
        flag = require("FlagEmbedding", "bge")
        self._model: Any = flag.FlagModel(
            name_or_path,
            pooling_method=pooling_method,
            query_instruction_for_retrieval=query_instruction,
            use_fp16=False,
            devices=device,
            batch_size=batch_size,
            normalize_embeddings=True,
        )
        self._lock = threading.Lock()
        self.dim = int(self.embed_documents(["dimension probe"]).shape[1])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        with self._lock:
            return normalise(self._model.encode_corpus(list(texts), convert_to_numpy=True))

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return normalise(self._model.encode_queries([text], convert_to_numpy=True))[0]
