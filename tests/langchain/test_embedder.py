"""A LangChain ``Embeddings`` as ``Hindsight(embedder=...)``: wrapped, batched, dimension-checked, and
recall works through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from hindsight_core import Hindsight, HindsightError
from hindsight_core.embeddings import resolve_embedder
from hindsight_core.embeddings.e5 import E5Embedder


class E5Embeddings(Embeddings):
    """The bundled e5 model behind LangChain's interface, the way a user wraps any model they have."""

    def __init__(self, e5: E5Embedder) -> None:
        self.e5 = e5
        self.model = "multilingual-e5-small"
        self.batches: list[int] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(len(texts))
        return [list(map(float, v)) for v in self.e5.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self.e5.embed_query(text)))


class Wobbly(DeterministicFakeEmbedding):
    """Answers one width for queries and another for documents: a broken remote model."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[0.1] * (self.size + 1) for _ in texts]


def test_a_langchain_embeddings_is_wrapped_with_its_dimension() -> None:
    wrapped = resolve_embedder(DeterministicFakeEmbedding(size=12))
    assert wrapped.dim == 12 and wrapped.name == "langchain:DeterministicFakeEmbedding:DeterministicFakeEmbedding"
    vectors = wrapped.embed_documents(["a", "b", "c"])
    assert vectors.shape == (3, 12) and str(vectors.dtype) == "float32"
    assert abs(float((vectors[0] ** 2).sum()) - 1.0) < 1e-5  # normalised: the engine uses dot products


def test_recall_through_a_langchain_embeddings(tmp_path: Path, embedder: E5Embedder) -> None:
    model = E5Embeddings(embedder)
    with Hindsight(tmp_path / "data", embedder=model) as hs:
        assert hs.embedder.name == "langchain:E5Embeddings:multilingual-e5-small" and hs.embedder.dim == 384
        hs.record_many(
            [{"content": f"Note {i}: the meeting room is number {i}"} for i in range(70)]
            + [{"content": "I am allergic to peanuts"}],
            "user:a",
        )
        assert max(model.batches) <= 64  # documents go in batches (remote models have request limits)
        hits = hs.recall("what about my peanuts allergy", "user:a", k=3).hits
        assert hits[0].memory.content == "I am allergic to peanuts"


def test_a_model_answering_another_width_fails_loudly(tmp_path: Path) -> None:
    wrapped = resolve_embedder(Wobbly(size=8))
    with pytest.raises(HindsightError, match="9-dimensional vectors, expected 8"):
        wrapped.embed_documents(["x"])


def test_something_else_is_still_refused() -> None:
    class NotAModel:
        def embed(self, text: str) -> Any:
            return [1.0]

    with pytest.raises(TypeError, match="Embedder protocol"):
        resolve_embedder(NotAModel())  # type: ignore[arg-type]
