"""The store's operations behave the same on SQLite and PostgreSQL, including under concurrent writers
(two stores on one data set stand for two processes)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import numpy as np
import pytest

from hindsight_core.errors import BackendUnavailableError, InvalidInputError
from hindsight_core.store import RelationalStore, jobs, leases, open_store, transcripts
from hindsight_core.store.erase import closure, erase, erased_among
from hindsight_core.store.sql import ConstraintConflict
from hindsight_core.types import Layer, Memory, Status

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _memory(mid: str, namespace: str = "user:a", **fields: object) -> Memory:
    return Memory(id=mid, namespace=namespace, content=f"memory {mid}", occurred_at=NOW, created_at=NOW,
                  updated_at=NOW, **fields)


def test_memories_round_trip_and_stay_in_their_namespace(store: RelationalStore) -> None:
    with store.transaction() as tx:
        tx.insert_memories([_memory("m1", metadata={"k": "ünï"}), _memory("m2", namespace="user:b")])
    got = store.get("m1")
    assert got is not None and got.metadata == {"k": "ünï"} and got.layer == Layer.EPISODIC
    assert set(store.get_many_in("user:a", ["m1", "m2"])) == {"m1"}
    assert store.namespaces() == ["user:a", "user:b"]
    assert store.memory_counts("user:a") == [("user:a", "episodic", "active", True, 1)]
    assert store.indexed_ids("user:a", "episodic") == ["m1"]


def test_the_lifecycle_reads_select_what_the_sweep_acts_on(store: RelationalStore) -> None:
    from hindsight_core.types import Activation

    ts, day = NOW.timestamp(), 86_400.0
    with store.transaction() as tx:
        tx.insert_memories([
            _memory("fresh", activation=Activation(log_base=0.0, ref_time=ts)),
            _memory("faint", activation=Activation(log_base=-1.0, ref_time=ts - 40 * day)),
            _memory("fainter", activation=Activation(log_base=-2.0, ref_time=ts - 40 * day)),
            _memory("other", namespace="user:b", activation=Activation(log_base=-2.0, ref_time=ts - 40 * day)),
            _memory("due", layer=Layer.SEMANTIC, expires_at=NOW),
            _memory("later", layer=Layer.SEMANTIC, expires_at=datetime(2027, 1, 1, tzinfo=UTC)),
            _memory("cold", status=Status.COLD, activation=Activation(log_base=-5.0, ref_time=ts - 200 * day)),
            _memory("old", status=Status.SUPERSEDED, superseded_by="fresh"),
        ])
    faded = {"rate": 0.1, "at": ts, "cold_log": -3.0, "idle_s": 30 * day}
    assert [m.id for m in store.fading("user:a", "episodic", **faded)] == ["fainter", "faint"]  # lowest first
    assert {m.id for m in store.fading(None, "episodic", **faded)} == {"fainter", "faint", "other"}
    assert [m.id for m in store.fading("user:a", "episodic", **faded, limit=1)] == ["fainter"]
    assert [m.id for m in store.expired("user:a", ts)] == ["due"]
    assert [m.id for m in store.cold_since(None, ts - 100 * day)] == ["cold"]
    assert store.cold_since("user:b", ts) == []
    assert [m.id for m in store.superseded_by_any("user:a", ["fresh", "faint"])] == ["old"]
    assert store.superseded_by_any("user:b", ["fresh"]) == []
    both = store.find_memories("user:a", layer=("episodic", "semantic"), status="active")
    assert [m.id for m in both] == ["fresh", "faint", "fainter", "due", "later"]
    assert store.find_memories("user:a", layer=()) == []


def test_a_failed_transaction_changes_nothing(store: RelationalStore) -> None:
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.insert_memories([_memory("m1")])
        raise RuntimeError("caller failed")
    assert store.get("m1") is None
    with store.transaction() as tx:  # the store is usable after the rollback
        tx.insert_memories([_memory("m1")])
    assert store.get("m1") is not None


def test_duplicate_source_id_is_a_conflict_and_rolls_back(store: RelationalStore) -> None:
    with store.transaction() as tx:
        tx.insert_memories([_memory("m1")], ["src-1"])
    with pytest.raises(ConstraintConflict), store.transaction() as tx:
        tx.insert_memories([_memory("m2")])
        tx.insert_memories([_memory("m3")], ["src-1"])
    assert store.get("m2") is None  # the whole transaction went
    assert set(store.by_external_ids("user:a", "episodic", ["src-1"])) == {"src-1"}


def test_racing_writers_of_one_source_id_store_it_once(store_location: str) -> None:
    """Each writer reads (absent), then inserts; the unique key lets exactly one through, as the engine's
    upsert relies on (it retries the loser, which then finds the winner)."""
    stores = [open_store(store_location) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def write(i: int, s: RelationalStore) -> None:
        barrier.wait()
        try:
            with s.transaction() as tx:
                if not tx.by_external_ids("user:a", "episodic", ["key"]):
                    tx.insert_memories([_memory(f"m{i}")], ["key"])
                    outcomes.append("inserted")
                    return
            outcomes.append("found")
        except ConstraintConflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=write, args=(i, s)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert outcomes.count("inserted") == 1
        assert len(stores[0].select("namespace = ?", ["user:a"])) == 1
    finally:
        for s in stores:
            s.close()


def test_concurrent_transcript_appends_lose_nothing(store_location: str) -> None:
    """Read-modify-write in one transaction (what ``edit_transcript`` does) from several stores: every
    append survives, in some order."""
    stores = [open_store(store_location) for _ in range(3)]
    per_writer = 15

    def append(i: int, s: RelationalStore) -> None:
        for n in range(per_writer):
            with s.transaction() as tx:
                old = transcripts.read(tx, "user:a", "chat")
                transcripts.write(tx, "user:a", "chat", old, [*(old or []), f'"{i}-{n}"'], float(n))

    threads = [threading.Thread(target=append, args=(i, s)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        entries = transcripts.read(stores[0], "user:a", "chat") or []
        assert sorted(entries) == sorted(f'"{i}-{n}"' for i in range(3) for n in range(per_writer))
        for i in range(3):  # each writer's own appends keep their order
            mine = [e for e in entries if e.startswith(f'"{i}-')]
            assert mine == [f'"{i}-{n}"' for n in range(per_writer)]
    finally:
        for s in stores:
            s.close()


def test_transcript_replace_append_and_delete(store: RelationalStore) -> None:
    with store.transaction() as tx:
        transcripts.write(tx, "user:a", "k", None, ['"a"', '"b"'], 1.0)
    with store.transaction() as tx:
        transcripts.write(tx, "user:a", "k", ['"a"', '"b"'], ['"a"', '"b"', '"c"'], 2.0)
    assert transcripts.read(store, "user:a", "k") == ['"a"', '"b"', '"c"']
    with store.transaction() as tx:
        transcripts.write(tx, "user:a", "k", ['"a"', '"b"', '"c"'], ['"z"'], 3.0)
    assert transcripts.read(store, "user:a", "k") == ['"z"']
    assert transcripts.read(store, "user:b", "k") is None
    with store.transaction() as tx:
        transcripts.delete(tx, "user:a", "k")
    assert transcripts.keys(store, "user:a") == []


def test_a_batch_written_outside_a_transaction_is_all_or_nothing(store: RelationalStore) -> None:
    store.insert_memories([_memory("m1")], ["src-1"])
    with pytest.raises(ConstraintConflict):  # the third row repeats a source id: the batch goes as a whole
        store.insert_memories([_memory("m2"), _memory("m3"), _memory("m4")], [None, None, "src-1"])
    assert store.get("m2") is None and store.get("m3") is None
    store.insert_memories([_memory("m2"), _memory("m3")])
    assert set(store.get_many_in("user:a", ["m1", "m2", "m3", "m4"])) == {"m1", "m2", "m3"}


def test_outbox_coalesces_and_settles_only_what_was_applied(store: RelationalStore) -> None:
    with store.transaction() as tx:
        tx.enqueue([("m1", "user:a", "episodic", "vector", "sync")], 1.0)
    [item] = store.pending()
    with store.transaction() as tx:  # newer work arrives while the drain applies ``item``
        tx.enqueue([("m1", "user:a", "episodic", "vector", "sync")], 2.0)
    store.settle([item])
    [again] = store.pending()
    assert again.id == item.id and again.version == item.version + 1
    assert store.charge([again], "boom", max_attempts=1) == 1
    assert store.pending_count() == 0 and [p[5] for p in store.parked()] == ["boom"]
    assert store.unpark() == 1
    store.settle(store.pending())
    assert store.pending_count() == 0


def test_leases_have_one_owner_across_stores(store_location: str) -> None:
    a, b = open_store(store_location), open_store(store_location)
    try:
        assert leases.acquire(a, "job", "a", now=100.0, duration=10.0)
        assert not leases.acquire(b, "job", "b", now=105.0, duration=10.0)
        assert leases.renew(a, "job", "a", now=108.0, duration=10.0)
        assert leases.acquire(b, "job", "b", now=118.5, duration=10.0)  # expired: taken over
        assert not leases.renew(a, "job", "a", now=119.0, duration=10.0)
        assert leases.holder(a, "job", now=119.0) == "b"
    finally:
        a.close()
        b.close()


def test_jobs_and_consolidated_episodes(store: RelationalStore) -> None:
    with store.transaction() as tx:
        tx.insert_memories([_memory("e1"), _memory("e2", status=Status.COLD), _memory("e3", session_id="s")])
    job = jobs.create(store, "user:a", None, "manual", 1.0, owner="gone")
    assert jobs.get(store, job) is not None and jobs.create(store, "user:a", None, "manual", 1.0) > job
    with store.transaction() as tx:
        jobs.mark_consolidated(tx, "user:a", ["e1"], job, 2.0)
        jobs.mark_consolidated(tx, "user:a", ["e1"], None, 3.0)  # already marked: kept
    assert store.consolidated_of("user:a") == [("e1", 2.0)]
    assert [m.id for m in jobs.unconsolidated(store, "user:a", None)] == ["e2", "e3"]
    assert [m.id for m in jobs.unconsolidated(store, "user:a", "s")] == ["e3"]
    assert jobs.abandon(store, "user:a", "lease:user:a", 5.0) == 2  # both running, no lease held
    assert jobs.counts(store, "user:a")[jobs.FAILED] == 2


def test_erase_removes_traces_and_leaves_tombstones(store: RelationalStore) -> None:
    with store.transaction() as tx:
        tx.insert_memories([
            _memory("e1"), _memory("e2"),
            _memory("f1", layer=Layer.SEMANTIC, source_ids=["e1"]),
            _memory("f2", layer=Layer.SEMANTIC, source_ids=["e1", "e2"]),
        ])
        tx.put_embeddings("model", {"e1": np.ones(3, dtype=np.float32)})
    with store.transaction() as tx:
        stored, rewritten = closure(tx, "user:a", ["e1"])
        assert sorted(mid for mid, _ in stored) == ["e1", "f1"]
        assert rewritten == {"f2": ["e2"]}
        erase(tx, "user:a", [mid for mid, _ in stored], rewritten, 9.0)
    assert store.get("e1") is None and store.get("f1") is None
    f2 = store.get("f2")
    assert f2 is not None and f2.source_ids == ["e2"]
    assert store.get_embeddings("model", ["e1"]) == {}
    assert erased_among(store, ["e1", "f1", "e2"]) == {"e1", "f1"}


def test_text_the_backend_cannot_store_is_invalid_input(store: RelationalStore) -> None:
    with pytest.raises(InvalidInputError), store.transaction() as tx:
        tx.insert_memories([_memory("m1").model_copy(update={"content": "bad \ud800 surrogate"})])
    assert store.get("m1") is None


@pytest.mark.integration  # a real model, server or process, reached without a fixture
def test_unreachable_postgres_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailableError):
        open_store("postgresql://postgres@127.0.0.1:1/test?connect_timeout=1")


def test_unknown_url_scheme_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError):
        open_store("mysql://localhost/db")


def test_postgres_without_the_extra_says_which_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from hindsight_core.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "psycopg", None)  # what an absent package looks like to import
    with pytest.raises(MissingExtraError, match=r"hindsight-memory\[postgres\]"):
        open_store("postgresql://postgres@127.0.0.1:5432/test")
