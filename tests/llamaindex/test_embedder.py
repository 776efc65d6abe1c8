"""A LlamaIndex ``BaseEmbedding`` as ``Hindsight(embedder=...)``: wrapped, batched, dimension-checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings import MockEmbedding

from hindsight_core import Hindsight
from hindsight_core.embeddings import resolve_embedder
from hindsight_core.embeddings.e5 import E5Embedder


class E5Embedding(BaseEmbedding):
    """The bundled e5 model behind LlamaIndex's interface, as a user wraps a local model."""

    _e5: Any = PrivateAttr()

    def __init__(self, e5: E5Embedder, **kw: Any) -> None:
        super().__init__(model_name="multilingual-e5-small", **kw)
        self._e5 = e5

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._e5.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in self._e5.embed_documents([text])[0]]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in self._e5.embed_documents(texts)]


def test_mock_embedding_is_wrapped_with_its_dimension() -> None:
    wrapped = resolve_embedder(MockEmbedding(embed_dim=16))  # type: ignore[arg-type]
    assert wrapped.dim == 16 and wrapped.name.startswith("llamaindex:MockEmbedding:")
    assert wrapped.embed_documents(["a", "b"]).shape == (2, 16)


def test_recall_through_a_llamaindex_embedding(tmp_path: Path, embedder: E5Embedder) -> None:
    with Hindsight(tmp_path / "data", embedder=E5Embedding(embedder)) as hs:  # type: ignore[arg-type]
        assert hs.embedder.name == "llamaindex:E5Embedding:multilingual-e5-small" and hs.embedder.dim == 384
        hs.record("My budget for the Lisbon trip is 3000 euros", "user:a")
        hs.record("We talked about hiking in the Alps", "user:a")
        hits = hs.recall("how much can I spend in Lisbon", "user:a", k=1).hits
        assert hits[0].memory.content == "My budget for the Lisbon trip is 3000 euros"
