"""Store-level write path: N transactions of (insert one memory + its two outbox rows), no embedding,
so the relational store's own cost is what is measured. SQLite in a temp dir, or the store at a URL:

    .venv/bin/python benchmarks/store_write.py 300 [postgresql://postgres@127.0.0.1:5432/test?options=-csearch_path%3Dhs_bench]

Prints transactions per second. Pair it with another checkout by running it under each PYTHONPATH."""
from __future__ import annotations

import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime

from hindsight_core.store import open_store
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Memory


def run(store: RelationalStore, n: int) -> float:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    start = time.perf_counter()
    for i in range(n):
        mid = uuid.uuid4().hex
        m = Memory(id=mid, namespace="bench", content=f"note {i}", occurred_at=now, created_at=now, updated_at=now)
        with store.transaction() as tx:
            tx.insert_memories([m])
            tx.enqueue([(mid, "bench", "episodic", t, "sync") for t in ("vector", "activation")], 1.0)
    return n / (time.perf_counter() - start)



def main() -> None:
    n = int(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="store-write-") as tmp:
        store = open_store(sys.argv[2] if len(sys.argv) > 2 else f"{tmp}/s.sqlite3")
        try:
            print(f"{run(store, n):.1f}")
        finally:
            store.close()


if __name__ == "__main__":
    main()
