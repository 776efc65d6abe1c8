"""Embedders: a protocol and its implementations (bundled multilingual-e5, any BGE via FlagEmbedding, a
LangChain or LlamaIndex embedding model wrapped)."""

from hindsight_core.embeddings.base import Embedder
from hindsight_core.embeddings.resolve import resolve_embedder

__all__ = ["Embedder", "resolve_embedder"]
