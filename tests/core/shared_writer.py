"""Child process for the verify test: one of several engines writing ONE embedded Chroma directory at
once, the multi-process setup the directory lock now refuses. It injects its own ``ChromaVectorIndex``
(an injected index takes no lock) to reproduce what several ``Hindsight(path)`` processes did before.

Usage: python shared_writer.py DATA_DIR GO_FILE TAG N_EVENTS"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hindsight_core import Hindsight
from hindsight_core.embeddings.base import normalise
from hindsight_core.engine import UNSCOPED_PREFIX, index_scope
from hindsight_core.store import open_store
from hindsight_core.vectors.chroma import ChromaVectorIndex


class HashEmbedder:
    """Deterministic vectors from a hash of the whole text: the corruption is Chroma's, and a real model
    would only make each writer slower. Not the shared ``HashedWordEmbedder``: these notes share most of
    their words, and vectors that close leave a few of 1,200 outside HNSW's top 100 for their own vector
    even in a healthy index. The parent reads the stored vectors under the same ``name``."""

    name = "test/sha256-64"
    dim = 64

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little") for t in texts]
        return normalise(np.stack([np.random.default_rng(s).normal(size=self.dim) for s in seeds]))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def main() -> None:
    data, go, tag, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = open_store(Path(data) / "hindsight.sqlite3")  # the parent created the data set
    prefix = f"{UNSCOPED_PREFIX}_{index_scope(store.dataset_id())}"  # the names Hindsight(path) uses
    store.close()
    vectors = ChromaVectorIndex(os.path.join(data, "chroma"), collection_prefix=prefix)
    with Hindsight(data, embedder=HashEmbedder(), vector_index=vectors, background_consolidation=False) as hs:
        while not os.path.exists(go):
            time.sleep(0.005)
        for start in range(0, n, 20):
            hs.record_many([f"writer {tag} note {i}: item {i * 7 % 101}" for i in range(start, min(n, start + 20))],
                           namespace="shared:ns")


if __name__ == "__main__":
    main()
