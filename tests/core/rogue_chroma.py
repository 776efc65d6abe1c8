"""Child process for the verify test: a rogue writer that opens an engine's Chroma directory with its own
``chromadb.PersistentClient`` (raw Chroma knows nothing of the engine's lock) and rewrites every entry of
one namespace with a random vector, keeping ids and metadata. The index then holds exactly the ids it
should, and answers wrongly.

Usage: python rogue_chroma.py CHROMA_DIR NAMESPACE"""

from __future__ import annotations

import sys

import chromadb
import numpy as np
from chromadb.config import Settings


def main() -> None:
    path, namespace = sys.argv[1], sys.argv[2]
    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    rng = np.random.default_rng(7)
    rewritten = 0
    for collection in client.list_collections():  # the namespace's pool or its own collection
        held = collection.get(where={"namespace": namespace}, include=["embeddings", "metadatas"])
        if held["ids"]:
            dim = len(held["embeddings"][0])
            collection.upsert(ids=held["ids"], metadatas=held["metadatas"],
                              embeddings=rng.normal(size=(len(held["ids"]), dim)).astype(np.float32))
            rewritten += len(held["ids"])
    print(rewritten)


if __name__ == "__main__":
    main()
