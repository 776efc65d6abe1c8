"""A LangChain ``Embeddings`` or a LlamaIndex ``BaseEmbedding`` as the engine's embedder.

Users of either framework already have an embedding model configured (OpenAI, HuggingFace, Ollama,
Bedrock ...); ``Hindsight(embedder=that_model)`` should just take it. Recognised by shape, not by
import, so neither framework is imported here:

* LangChain: ``embed_documents(list[str]) -> list[list[float]]`` and ``embed_query(str)``;
* LlamaIndex: ``get_text_embedding_batch(list[str])`` and ``get_query_embedding(str)``.

The wrapper sends documents in batches of ``batch_size`` (remote models have request limits), turns
the lists into float32 and normalises them (the engine compares by dot product), and checks every
vector against the model's dimension, found with one probe query when not given: a model that
answers with another width would corrupt the vector index, so it fails loudly instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hindsight_core.embeddings.base import normalise
from hindsight_core.errors import HindsightError, InvalidInputError

_NAME_ATTRIBUTES = ("model_name", "model", "model_id", "deployment", "model_path")


class EmbedderError(HindsightError):
    """A wrapped embedding model answered with something that is not one vector per text of its width."""


def framework_of(model: object) -> str | None:
    """``"langchain"`` or ``"llamaindex"`` when ``model`` has that framework's embedding methods."""
    if callable(getattr(model, "get_text_embedding_batch", None)) and callable(
        getattr(model, "get_query_embedding", None)
    ):
        return "llamaindex"
    if callable(getattr(model, "embed_documents", None)) and callable(getattr(model, "embed_query", None)):
        return "langchain"
    return None


def _model_label(model: object) -> str:
    for attribute in _NAME_ATTRIBUTES:
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return type(model).__name__


class FrameworkEmbedder:
    """The :class:`~hindsight_core.embeddings.Embedder` protocol over a framework's embedding model.

    ``name`` identifies the vector space (stored with every cached vector, so a model change is
    seen): by default ``"<framework>:<class>:<model name>"``. Pass ``name=`` when two configurations of
    one class differ in a way the label does not show (dimensions, a fine-tune)."""

    def __init__(
        self, model: Any, *, name: str | None = None, dim: int | None = None, batch_size: int = 64
    ) -> None:
        framework = framework_of(model)
        if framework is None:
            raise TypeError(
                f"{type(model).__name__} is neither a LangChain Embeddings nor a LlamaIndex BaseEmbedding"
            )
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError("batch_size must be a positive int")
        self.model = model
        self.framework = framework
        self.batch_size = batch_size
        self.name = name or f"{framework}:{type(model).__name__}:{_model_label(model)}"
        self.dim = 0
        if dim is None:
            probe = self._query("dimension probe")
            dim = int(probe.shape[0])
        if not isinstance(dim, int) or dim < 1:
            raise InvalidInputError("dim must be a positive int")
        self.dim = dim

    def _vectors(self, raw: Any, count: int) -> np.ndarray:
        try:
            matrix = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbedderError(f"{self.name} returned vectors of uneven width or non-numbers: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[0] != count:
            raise EmbedderError(f"{self.name} returned {matrix.shape} for {count} texts (one vector per text expected)")
        if self.dim and matrix.shape[1] != self.dim:
            raise EmbedderError(
                f"{self.name} returned {matrix.shape[1]}-dimensional vectors, expected {self.dim}: the vector "
                "index holds one width per embedder"
            )
        if not np.all(np.isfinite(matrix)):
            raise EmbedderError(f"{self.name} returned NaN or infinite values")
        return matrix

    def _query(self, text: str) -> np.ndarray:
        embed = self.model.get_query_embedding if self.framework == "llamaindex" else self.model.embed_query
        raw = embed(text)
        return normalise(self._vectors([raw], 1))[0]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        llama = self.framework == "llamaindex"
        embed = self.model.get_text_embedding_batch if llama else self.model.embed_documents
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            raw = embed(batch)
            parts.append(self._vectors(raw, len(batch)))
        return normalise(np.concatenate(parts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._query(text)

    def __repr__(self) -> str:
        return f"FrameworkEmbedder(name={self.name!r}, dim={self.dim})"


__all__ = ["EmbedderError", "FrameworkEmbedder", "framework_of"]
