"""The vector index: one collection per layer, every entry tagged with its namespace."""

from hindsight_core.vectors.base import VectorHit, VectorIndex

__all__ = ["VectorHit", "VectorIndex"]
