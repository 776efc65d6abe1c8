"""Concurrent record/forget/record of the same memories while the vector index fails, then recovers:
the outbox must empty, nothing forgotten may stay in Chroma, nothing acknowledged may be missing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hindsight_core import Hindsight

from .conftest import FailingChroma

NS = "race:test"
THREADS = 8
ROUNDS = 4


@pytest.mark.slow
def test_record_forget_record_from_8_threads_with_the_vector_index_failing(tmp_path: Path, embedder) -> None:
    chroma = FailingChroma(tmp_path / "chroma")
    kept: set[str] = set()
    forgotten: set[str] = set()
    errors: list[BaseException] = []
    lock = threading.Lock()
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=chroma) as hs:
        chroma.down = True
        barrier = threading.Barrier(THREADS)

        def worker(t: int) -> None:
            try:
                barrier.wait()
                for r in range(ROUNDS):
                    first = hs.record(f"thread {t} round {r}: the parcel for unit {t * 10 + r} arrived", NS)
                    assert hs.forget(first.id)
                    second = hs.record(f"thread {t} round {r}: the parcel for unit {t * 10 + r} was resent", NS)
                    with lock:
                        forgotten.add(first.id)
                        kept.add(second.id)
            except BaseException as exc:  # surfaced below: a write must never fail on an index outage
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(kept) == THREADS * ROUNDS
        assert hs.vectors.ids(NS, "episodic") == set()
        # one pending vector row per memory touched, however often it was touched
        assert hs.store.pending_count() == len(kept) + len(forgotten)

        chroma.down = False
        report = hs.outbox.apply(None, force=True)  # the drain that used to raise DuplicateIDError
        stuck = hs.store.pending_count()
        parked = hs.stats().outbox_parked
        print(f"\nrace: {len(kept)} kept, {len(forgotten)} forgotten, {stuck} stuck, {parked} parked after recovery")
        assert report.errors == {}
        assert stuck == 0 and parked == 0
        held = hs.vectors.ids(NS, "episodic")
        assert kept <= held, f"{len(kept - held)} acknowledged memories missing from Chroma"
        assert not (held & forgotten), f"{len(held & forgotten)} forgotten memories still in Chroma"
        assert hs.reconcile(verify=True).failed == 0
        assert hs.vectors.ids(NS, "episodic") == kept
        assert {m for m, _ in hs.activation.top(NS, "episodic", 1000)} == kept
