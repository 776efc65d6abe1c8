"""Outbox rows are claimed per applier, on SQLite and on PostgreSQL: two processes (two stores, two
engines on one data set) never apply the same row at once, newer work coalesced into a claimed row waits
for its holder, and a dead applier's claim is taken over once it expires."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.errors import BackendUnavailableError
from hindsight_core.store import RelationalStore, open_store
from hindsight_core.vectors.chroma import ChromaVectorIndex

from ..conftest import FixedClock

NS = "claims:test"


def _enqueue(store: RelationalStore, ids: list[str], claims: dict[str, tuple[str, float]] | None = None) -> None:
    with store.transaction() as tx:
        tx.enqueue([(mid, NS, "episodic", "vector", "sync") for mid in ids], 100.0, claims)


def test_a_row_has_one_claimant_until_its_claim_expires(store_location: str) -> None:
    a, b = open_store(store_location), open_store(store_location)
    try:
        _enqueue(a, ["m1", "m2", "m3"])
        mine, cursor = a.claim("a", 100.0, 130.0, target="vector")
        assert [i.memory_id for i in mine] == ["m1", "m2", "m3"] and cursor == mine[-1].id
        assert b.claim("b", 120.0, 150.0, target="vector") == ([], None)  # a's claim is live
        assert b.claim("b", 120.0, 150.0, target="vector", memory_ids=["m2"]) == ([], None)
        taken, _ = b.claim("b", 131.0, 161.0, target="vector")  # a died: its claim expired at 130
        assert [i.memory_id for i in taken] == ["m1", "m2", "m3"]
        assert a.claim("a", 132.0, 162.0, target="vector") == ([], None)
        assert b.settle(taken, "b") == 0 and a.pending_count() == 0
    finally:
        a.close()
        b.close()


def test_newer_work_on_a_claimed_row_waits_for_the_holder(store_location: str) -> None:
    a, b = open_store(store_location), open_store(store_location)
    try:
        _enqueue(a, ["m1"], {"vector": ("a", 130.0)})  # a writer claims its own rows in its transaction
        [item], _ = a.claim("a", 100.0, 130.0, target="vector")
        _enqueue(b, ["m1"], {"vector": ("b", 130.0)})  # b rewrites m1 while a applies the old version
        assert b.claim("b", 101.0, 131.0, target="vector", memory_ids=["m1"]) == ([], None)
        assert a.settle([item], "a") == 1  # a applied the old version: the row stays, a lets go of it
        [newer], _ = b.claim("b", 102.0, 132.0, target="vector", memory_ids=["m1"])
        assert newer.version == item.version + 1
        b.settle([newer], "b")
        assert a.pending_count() == 0
    finally:
        a.close()
        b.close()


class CountingChroma(ChromaVectorIndex):
    """The real Chroma index, counting every id it is asked to upsert, slow enough per call that two
    appliers started together overlap, and unreachable while ``down``. Engines share one instance (closed
    by the last)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.upserted: Counter[str] = Counter()
        self.down = False
        self.users = 0
        self._count_lock = threading.Lock()

    def upsert(self, namespace: str, layer: str, ids: Any, vectors: np.ndarray, kinds: Any) -> None:
        if self.down:
            raise BackendUnavailableError("vector index: down")
        time.sleep(0.2)
        super().upsert(namespace, layer, ids, vectors, kinds)
        with self._count_lock:
            self.upserted.update(ids)

    def close(self) -> None:
        self.users -= 1
        if self.users <= 0:
            super().close()


@pytest.fixture
def engines(store_location: str, tmp_path: Path, embedder: Any) -> Iterator[Callable[[], Hindsight]]:
    """Engines on one data set, as processes would open it, sharing one Chroma index; one clock."""
    url = None if store_location.endswith(".sqlite3") else store_location
    index = CountingChroma(tmp_path / "chroma")
    clock = FixedClock()
    opened: list[Hindsight] = []

    def make() -> Hindsight:
        index.users += 1
        hs = Hindsight(tmp_path / f"engine{len(opened)}", database_url=url or str(tmp_path / "shared.sqlite3"),
                       vector_index=index, clock=clock, embedder=embedder, background_consolidation=False)
        opened.append(hs)
        return hs

    make.index = index  # type: ignore[attr-defined]
    make.clock = clock  # type: ignore[attr-defined]
    yield make
    for hs in opened:
        hs.close()


def _backlog(hs: Hindsight, index: CountingChroma, n: int) -> set[str]:
    """``n`` acknowledged records whose vector work is left in the outbox (the index was down)."""
    index.down = True
    ids = {hs.record(f"Backlog note {i}: shelf {i * 31 % 97} holds box {i}.", NS, source_id=f"b{i}").id
           for i in range(n)}
    index.down = False
    assert hs.store.pending_count() == n
    return ids


def test_two_appliers_racing_on_one_backlog_apply_each_row_once(engines: Callable[[], Hindsight]) -> None:
    a, b = engines(), engines()
    index: CountingChroma = engines.index  # type: ignore[attr-defined]
    ids = _backlog(a, index, 40)
    start = threading.Barrier(2)
    reports: dict[str, Any] = {}

    def drain(name: str, hs: Hindsight) -> None:
        start.wait()
        reports[name] = hs.outbox.apply(None, force=True)

    threads = [threading.Thread(target=drain, args=(n, hs)) for n, hs in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert set(reports) == {"a", "b"}
    assert sum(r.applied for r in reports.values()) == len(ids)
    assert dict(index.upserted) == dict.fromkeys(ids, 1)  # each memory sent to Chroma exactly once
    assert index.ids(NS, "episodic") == ids
    assert a.store.pending_count() == 0


def test_a_dead_appliers_claim_is_taken_over_when_it_expires(engines: Callable[[], Hindsight]) -> None:
    a, b = engines(), engines()
    index: CountingChroma = engines.index  # type: ignore[attr-defined]
    clock: FixedClock = engines.clock  # type: ignore[attr-defined]
    ids = _backlog(a, index, 5)
    now = clock().timestamp()
    claim_s = a.config.write.outbox_claim_s
    dead, _ = a.store.claim("host:1:dead", now, now + claim_s, target="vector")  # claimed, then killed
    assert len(dead) == len(ids)
    assert b.outbox.apply(None, force=True).applied == 0  # the claim is live: b leaves the rows alone
    assert index.ids(NS, "episodic") == set() and b.store.pending_count() == len(ids)
    clock.advance(seconds=claim_s + 1)
    assert b.outbox.apply(None, force=True).applied == len(ids)
    assert index.ids(NS, "episodic") == ids and dict(index.upserted) == dict.fromkeys(ids, 1)
    assert b.store.pending_count() == 0
