"""Outages for real: a private redis-server killed while records and recalls interleave, restarted
empty; the vector index made to fail. Recall keeps answering (degraded, flagged), writes are
acknowledged, and the indexes come back complete without an explicit ``reconcile(verify=True)``."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.config import HindsightConfig

from .conftest import FailingChroma, RedisServer

NS = "outage:test"
FACTS = [
    "I'm allergic to peanuts, seriously allergic.",
    "My sister Anna lives in Lisbon and teaches chemistry.",
    "We decided to cap the renovation budget at 30,000 euros.",
    "The dentist appointment is on the first Monday of April.",
]


def _activation_ids(hs: Hindsight) -> set[str]:
    return {m for m, _ in hs.activation.top(NS, "episodic", 10_000)}


def _recall_warnings(caplog: pytest.LogCaptureFixture, index: str) -> int:
    return sum(
        1 for r in caplog.records
        if r.name == "hindsight.recall" and r.levelno == logging.WARNING
        and r.getMessage().startswith(f"{index} index unavailable")
    )


@pytest.mark.slow
@pytest.mark.redis
def test_redis_killed_during_record_and_recall_then_restarted_empty(
    tmp_path: Path, embedder, private_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    acknowledged: list[str] = []
    with Hindsight(tmp_path / "data", redis_url=private_redis.url, embedder=embedder) as hs:
        acknowledged += [hs.record(text, NS, session_id="s1").id for text in FACTS]
        assert hs.recall("What am I allergic to?", NS).degraded == []
        private_redis.stop()
        failures: list[BaseException] = []
        flagged = 0
        for i in range(12):
            acknowledged.append(hs.record(f"Note {i}: the parcel for flat {i} is at the front desk", NS).id)
            try:
                result = hs.recall("What am I allergic to?", NS, session_id="s2")
            except Exception as exc:  # counted: the assertion below says how many recalls failed
                failures.append(exc)
                continue
            flagged += result.degraded == ["activation"]
            assert any("peanuts" in m.content for m in result.memories)
        print(f"\nredis down: {len(failures)} of 12 recalls failed, {flagged} flagged degraded")
        assert failures == [] and flagged == 12
        assert _recall_warnings(caplog, "activation") == 1, "warn once per outage, not once per recall"
        assert len(hs.find(NS)) == len(acknowledged)
        # Redis restarts EMPTY: the next recall notices it answers again and repairs the index by itself.
        private_redis.start()
        assert hs.recall("What am I allergic to?", NS).degraded == []
        assert _activation_ids(hs) == set(acknowledged)
        # a second outage warns again
        private_redis.stop()
        assert hs.recall("What am I allergic to?", NS).degraded == ["activation"]
        assert _recall_warnings(caplog, "activation") == 2
        hs.record("Note 99: the elevator is fixed", NS)
    private_redis.start()  # empty again, with the last write only in the outbox
    with Hindsight(tmp_path / "data", redis_url=private_redis.url, embedder=embedder) as hs:
        expected = {m.id for m in hs.find(NS)}
        found = _activation_ids(hs)  # opening repaired it: no reconcile(verify=True) called
        print(f"redis restarted empty: {len(expected)} acknowledged, {len(found)} found in Redis after reopen")
        assert found == expected and len(expected) == len(acknowledged) + 1
        assert hs.store.pending_count() == 0


@pytest.mark.slow
@pytest.mark.redis
def test_redis_back_empty_is_repaired_when_the_outbox_reaches_it(
    tmp_path: Path, embedder, private_redis: RedisServer
) -> None:
    with Hindsight(tmp_path / "data", redis_url=private_redis.url, embedder=embedder) as hs:
        ids = [hs.record(text, NS).id for text in FACTS]
        private_redis.stop()
        ids.append(hs.record("Note: the boiler was serviced today", NS).id)
        private_redis.start()
        report = hs.outbox.apply(None, force=True)  # the drain after the cool-down
        assert report.failed == 0
        assert _activation_ids(hs) == set(ids)
        assert hs.store.pending_count() == 0


@pytest.mark.slow
def test_vector_index_failing_degrades_recall_and_the_backlog_drains(
    tmp_path: Path, embedder, caplog: pytest.LogCaptureFixture, index_recall: HindsightConfig
) -> None:
    chroma = FailingChroma(tmp_path / "chroma")
    with Hindsight(tmp_path / "data", embedder=embedder, vector_index=chroma, config=index_recall) as hs:
        ids = [hs.record(text, NS, session_id="s1").id for text in FACTS]
        chroma.down = True
        ids += [hs.record(f"Note {i}: the parcel for flat {i} is at the front desk", NS).id for i in range(5)]
        for _ in range(3):
            result = hs.recall("Where does my sister live?", NS, session_id="s2")
            assert result.degraded == ["vector"]
            assert any("Lisbon" in m.content for m in result.memories)
        assert _recall_warnings(caplog, "vector") == 1
        assert hs.store.pending_count() == 5
        chroma.down = False
        assert hs.recall("Where does my sister live?", NS, session_id="s2").degraded == []
        hs.outbox.apply(None, force=True)
        assert hs.store.pending_count() == 0 and hs.stats().outbox_parked == 0
        assert hs.vectors.ids(NS, "episodic") == set(ids)


@pytest.mark.slow
@pytest.mark.redis
def test_data_sets_sharing_a_redis_each_repair_their_own_loss(
    tmp_path: Path, embedder, private_redis: RedisServer
) -> None:
    ids: dict[str, set[str]] = {}
    for name in ("a", "b"):
        with Hindsight(tmp_path / name, redis_url=private_redis.url, embedder=embedder) as hs:
            ids[name] = {hs.record(f"{text} ({name})", f"{NS}-{name}").id for text in FACTS}
    private_redis.stop()
    private_redis.start()  # empty
    with Hindsight(tmp_path / "a", redis_url=private_redis.url, embedder=embedder) as hs:
        assert {m for m, _ in hs.activation.top(f"{NS}-a", "episodic", 100)} == ids["a"]
    with Hindsight(tmp_path / "b", redis_url=private_redis.url, embedder=embedder) as hs:
        # a's marker must not vouch for b's data
        assert {m for m, _ in hs.activation.top(f"{NS}-b", "episodic", 100)} == ids["b"]


@pytest.mark.redis
def test_redis_restarted_empty_between_two_calls_is_repaired_while_the_process_runs(
    tmp_path: Path, embedder, private_redis: RedisServer
) -> None:
    """No call fails (Redis is back before the next one), so the outbox sees no outage: the marker,
    looked at on a clock while writes go on, tells that the data is gone."""
    with Hindsight(tmp_path / "data", redis_url=private_redis.url, embedder=embedder) as hs:
        ids = [hs.record(text, NS).id for text in FACTS]
        assert _activation_ids(hs) == set(ids)
        private_redis.stop()
        private_redis.start()  # empty, and answering before the next call
        deadline = time.monotonic() + 10
        for i in range(100):
            ids.append(hs.record(f"Note {i}: the parcel for flat {i} is at the front desk", NS).id)
            if _activation_ids(hs) == set(ids) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert _activation_ids(hs) == set(ids)
        assert hs.store.pending_count() == 0
