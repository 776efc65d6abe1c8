"""The cost of extending a namespace's snapshot by one memory (what every chat turn's write adds to the
next recall), at a given namespace size, in this process only: no store, no index, no embedder.

A snapshot of ``--size`` synthetic memories (sessions of 20 turns, a few entities each) is built in
memory, then extended ``--appends`` times by one memory each (``corpus._append``, as the cache does
after a write); the median and p95 per extension are printed. Run it with each tree on ``PYTHONPATH``
(alternating) to compare them:

    PYTHONPATH=/path/to/tree .venv/bin/python benchmarks/snapshot_append.py --size 100000
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import time
from datetime import UTC, datetime, timedelta

import numpy as np

from hindsight_core.recall import corpus as snapshot
from hindsight_core.recall.keyword import KeywordIndex
from hindsight_core.types import Memory

WORDS = ["beagle", "violin", "Lisbon", "budget", "dentist", "review", "sourdough", "marathon", "allergy"]
NAMES = ["Biscuit", "Lily", "Ana", "Wang Lei", "Lisbon", "Berlin"]


def memories(n: int, offset: int = 0) -> list[Memory]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(offset, offset + n):
        at = start + timedelta(minutes=i)
        out.append(Memory.model_construct(
            id=f"m{i:08d}", namespace="user:bench", session_id=f"s{i // 20}", content=(
                f"Turn {i} about {WORDS[i % len(WORDS)]} and {WORDS[i * 7 % len(WORDS)]} with {NAMES[i % 6]}."),
            occurred_at=at, created_at=at, updated_at=at, entities=[NAMES[i % 6]], **_defaults()))
    return out


def _defaults() -> dict[str, object]:
    fields = Memory.model_fields
    return {name: f.get_default(call_default_factory=True) for name, f in fields.items()
            if name in ("layer", "kind", "importance", "activation", "status", "source_ids", "metadata")}


#: A tree whose snapshots mark standing facts (profile.py) is given none: the append is what is timed.
_STANDING = ({"standing_of": lambda memories, vectors: [()] * len(memories)}
             if "standing_of" in inspect.signature(snapshot._append).parameters else {})


def built(n: int, dim: int) -> snapshot.Corpus:
    rows = memories(n)
    vectors = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    keyword = KeywordIndex([m.content for m in rows])
    try:
        growth = snapshot._Growth(vectors[:0], keyword)  # type: ignore[call-arg]
    except TypeError:  # a tree whose growth state also takes the session bookkeeping
        growth = snapshot._Growth(vectors[:0], keyword, {})  # type: ignore[call-arg]
    empty_vectors = growth.vectors.view() if hasattr(growth, "vectors") else growth.buffer[:0]  # type: ignore[attr-defined]
    empty = snapshot.Corpus(key=("user:bench", False), memories=snapshot.MemoryRows("user:bench", lambda ids: {}),
                            vectors=empty_vectors, keyword=keyword.view(0), growth=growth)
    return snapshot._append(empty, rows, {}, None, 1, n, vectors=vectors, indexed=True, **_STANDING)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    corpus = built(args.size, args.dim)
    fresh = memories(args.appends, offset=args.size)
    rows = np.random.default_rng(1).standard_normal((args.appends, args.dim)).astype(np.float32)
    times = []
    for i, m in enumerate(fresh):
        assert corpus.growth is not None
        t = time.perf_counter()
        with corpus.growth.lock:
            corpus = snapshot._append(corpus, [m], {}, None, corpus.change + 1, corpus.max_seq + 1,
                                      vectors=rows[i : i + 1], **_STANDING)
        times.append(time.perf_counter() - t)
    times.sort()
    print(f"size {args.size}: append one memory median {1000 * statistics.median(times):.2f} ms, "
          f"p95 {1000 * times[int(0.95 * (len(times) - 1))]:.2f} ms ({args.appends} appends)")


if __name__ == "__main__":
    main()
