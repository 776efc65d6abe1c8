"""What each embedded Chroma collection written by a process costs it in RSS, and what bounding
Chroma's cache of loaded HNSW indexes would save (chromadb 1.x, Rust bindings).

Each collection written or queried keeps its HNSW index loaded in the process; the bindings' cache of
loaded indexes holds ``RLIMIT_NOFILE // 5`` of them (``RustBindingsAPI.hnsw_cache_size``, not a setting),
so with 1,000 namespaces every one stays. ``--cache N`` sets that size (see ``bound_hnsw_cache``), and
the script checks that evicted collections still answer with every vector.

    .venv/bin/python benchmarks/chroma_rss.py --collections 500 [--cache 16]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

import numpy as np

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

def bound_hnsw_cache(size: int) -> None:
    """Every embedded client made after this keeps at most ``size`` HNSW indexes loaded. The size is
    not a Chroma setting (and ``chroma_api_impl`` accepts only Chroma's own classes), so the bindings'
    constructor is wrapped: a benchmark's way in, not the engine's."""
    from chromadb.api.rust import RustBindingsAPI

    original = RustBindingsAPI.__init__

    def init(self: Any, system: Any) -> None:
        original(self, system)
        self.hnsw_cache_size = size

    RustBindingsAPI.__init__ = init  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", type=int, default=500)
    parser.add_argument("--vectors", type=int, default=100, help="vectors per collection")
    parser.add_argument("--cache", type=int, default=0, help="loaded HNSW indexes at most (0: Chroma's default)")
    args = parser.parse_args()
    import chromadb
    import psutil
    from chromadb.config import Settings

    if args.cache:
        bound_hnsw_cache(args.cache)
    settings = Settings(anonymized_telemetry=False)
    client = chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="chroma-rss-"), settings=settings)
    process = psutil.Process()
    rng = np.random.default_rng(0)
    before = process.memory_info().rss
    started = time.perf_counter()
    collections = []
    for i in range(args.collections):
        collection = client.get_or_create_collection(f"tenant{i}", embedding_function=None,
                                                     metadata={"hnsw:space": "cosine"})
        collection.upsert(ids=[f"{i}-{j}" for j in range(args.vectors)],
                          embeddings=rng.standard_normal((args.vectors, 384)).astype(np.float32))
        collections.append(collection)
    grown = (process.memory_info().rss - before) / 2**20
    probe = collections[:: max(1, args.collections // 10)]
    answered = [len(c.query(query_embeddings=[rng.standard_normal(384).astype(np.float32)],
                            n_results=args.vectors)["ids"][0]) for c in probe]
    print(f"cache {args.cache or 'default'}: {args.collections} collections of {args.vectors} vectors written in "
          f"{time.perf_counter() - started:.1f} s, RSS +{grown:.0f} MB ({grown / args.collections:.2f} MB each); "
          f"every tenth answers with {sorted(set(answered))} of {args.vectors}")


if __name__ == "__main__":
    main()
