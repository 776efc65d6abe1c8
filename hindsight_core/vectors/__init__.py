"""The vector index: per layer, small namespaces share pool collections (entries tagged with their
namespace) and a namespace with 1,000 entries has a collection of its own (``chroma.py``)."""

from hindsight_core.vectors.base import VectorHit, VectorIndex

__all__ = ["VectorHit", "VectorIndex"]
