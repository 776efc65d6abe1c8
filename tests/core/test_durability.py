"""Nothing acknowledged is lost: a SIGKILL mid-import, Redis going away, Chroma raising."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.vectors.chroma import ChromaVectorIndex

WRITER = Path(__file__).with_name("crash_writer.py")
NS = "crash:test"


def _acked(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line] if path.exists() else []


def _assert_consistent(hs: Hindsight, must_have: list[str]) -> int:
    """Every acknowledged event is stored once and present in both derived indexes; returns the count."""
    hs.wait_for_consolidation()  # background consolidation adds semantic memories and index work of its own
    hs.reconcile()
    rows = hs.store.query("SELECT id, external_id FROM memories WHERE namespace = ? AND layer = 'episodic'", (NS,))
    keys = [r[1] for r in rows]
    assert len(keys) == len(set(keys)), "an event was stored twice"
    assert set(must_have) <= set(keys), f"{len(set(must_have) - set(keys))} acknowledged events lost"
    ids = {r[0] for r in rows}
    assert hs.vectors.ids(NS, "episodic") == ids
    assert {m for m, _ in hs.activation.top(NS, "episodic", len(ids) + 10)} == ids
    assert hs.store.pending_count() == 0
    for layer in ("semantic", "procedural"):  # whatever consolidation derived is indexed as well
        derived = {r[0] for r in hs.store.query(
            "SELECT id FROM memories WHERE namespace = ? AND layer = ? AND status = 'active' AND indexed = 1",
            (NS, layer))}
        assert hs.vectors.ids(NS, layer) == derived
    return len(ids)


def _kill_when(proc: subprocess.Popen, ack: Path, at_least: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while len(_acked(ack)) < at_least:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "writer exited early"
        assert time.monotonic() < deadline, "writer too slow"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_sigkill_in_the_middle_of_record_many(tmp_path: Path, embedder) -> None:
    total = 2_000
    ack = tmp_path / "acks.txt"
    proc = subprocess.Popen([sys.executable, str(WRITER), str(tmp_path / "data"), str(ack), str(total)],
                            stderr=subprocess.PIPE, text=True)
    _kill_when(proc, ack, at_least=700)
    acknowledged = _acked(ack)
    assert 700 <= len(acknowledged) < total, "the kill must land mid-import"

    with Hindsight(tmp_path / "data", embedder=embedder) as hs:
        hs.reconcile()
        found = _assert_consistent(hs, acknowledged)
        print(f"\ncrash: {total} events sent, {len(acknowledged)} acknowledged, {found} found after reconcile")
    # Re-running the same import completes it without duplicates (source_id is an idempotency key).
    subprocess.run([sys.executable, str(WRITER), str(tmp_path / "data"), str(tmp_path / "acks2.txt"), str(total)],
                   check=True)
    with Hindsight(tmp_path / "data", embedder=embedder) as hs:
        hs.reconcile()
        assert _assert_consistent(hs, [f"E{i}" for i in range(total)]) == total


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A private redis-server for outage tests, so stopping it disturbs nobody else."""

    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        import redis

        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port).ping()
                return
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.mark.slow
@pytest.mark.redis
def test_redis_outage_during_writes(tmp_path: Path, embedder, private_redis: RedisServer) -> None:
    total = 1_200
    events = [{"content": f"Event {i}: note about subject {i % 53}", "source_id": f"E{i}"} for i in range(total)]
    acknowledged: list[str] = []
    with Hindsight(tmp_path / "data", redis_url=private_redis.url, embedder=embedder) as hs:
        stopper = threading.Thread(
            target=lambda: (_wait_for(lambda: len(acknowledged) >= 300), private_redis.stop())
        )
        stopper.start()
        hs.record_many(events, namespace=NS, on_commit=lambda ms: acknowledged.extend(m.source_id for m in ms))
        stopper.join()
        assert len(acknowledged) == total, "writes must succeed while Redis is down"
        pending = hs.store.pending_count()
        assert pending > 0, "activation work must wait in the outbox during the outage"
        # Redis comes back empty (no persistence): reconcile re-applies the outbox and repairs the rest.
        private_redis.start()
        report = hs.reconcile()
        assert report.failed == 0
        found = _assert_consistent(hs, acknowledged)
        print(f"\nredis outage: {total} written, {len(acknowledged)} acknowledged, {pending} outbox rows "
              f"pending during the outage, {found} in all three stores after reconcile")


def _wait_for(condition, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


class FlakyChroma(ChromaVectorIndex):
    """The real Chroma index, made to raise on writes while ``broken`` is set."""

    broken = True

    def upsert(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if self.broken:
            raise ConnectionError("chroma is down")
        super().upsert(*args, **kwargs)


@pytest.mark.slow
def test_chroma_failure_keeps_writes_and_catches_up(tmp_path: Path, embedder) -> None:
    flaky = FlakyChroma(tmp_path / "chroma")
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=flaky) as hs:
        stored = hs.record_many(
            [{"content": f"Event {i}: fact number {i}", "source_id": f"E{i}"} for i in range(300)], namespace=NS
        )
        assert len(stored) == 300 and hs.stats(NS).total == 300
        assert hs.vectors.ids(NS, "episodic") == set()
        assert hs.activation.count(NS, "episodic") == 300  # the healthy index is not held back
        assert len(hs.store.pending(memory_ids=[m.id for m in stored], target="vector")) == 300
        assert hs.get(stored[5].id) == stored[5]  # acknowledged and readable during the failure
        flaky.broken = False
        assert hs.reconcile().failed == 0
        _assert_consistent(hs, [f"E{i}" for i in range(300)])
        hit = hs.vectors.query(NS, "episodic", hs.embedder.embed_query("Event 7: fact number 7"), 1)[0]
        assert hit.memory_id == stored[7].id
        cached = hs.store.get_embeddings(hs.embedder.name, [stored[7].id])[stored[7].id]
        assert np.isclose(np.linalg.norm(cached), 1.0, atol=1e-3)
