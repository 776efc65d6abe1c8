"""Embedders: a protocol and two implementations (bundled multilingual-e5, any BGE via FlagEmbedding)."""

from hindsight_core.embeddings.base import Embedder, resolve_embedder

__all__ = ["Embedder", "resolve_embedder"]
