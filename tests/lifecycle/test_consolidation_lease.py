"""Consolidation of a namespace holds a lease in the relational store: two processes never distill
the same episodes, and a job whose process died is taken over once its lease expires."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_core.store import leases
from hindsight_core.store.sql import RelationalStore

CHILD = Path(__file__).with_name("consolidate_child.py")
NS = "user:lease"
SENTENCES = [
    "I'm allergic to peanuts.", "I live in Lisbon.", "My name is Dana.", "I work as a nurse.",
    "I love jazz music.", "I hate cilantro.", "My budget is $3000.", "I'm vegetarian.", "I play the violin.",
    "I'm learning Korean.", "My favourite color is green.", "I have a dog named Rex.", "I prefer window seats.",
    "I'm allergic to shellfish.", "I love hiking in the mountains.", "I prefer tea over coffee.",
    "I hate loud bars.", "I'm learning to swim.",
]


def _active_facts(hs: Hindsight, namespace: str = NS) -> list[str]:
    return sorted(m.content for m in hs.store.select(
        "namespace = ? AND layer IN ('semantic', 'procedural') AND status = 'active'", (namespace,)))


def _seed(data: Path, embedder: Any) -> None:
    with Hindsight(data, embedder=embedder, background_consolidation=False) as hs:
        for i, text in enumerate(SENTENCES):
            hs.record(text, NS, session_id=f"s{i % 2}", source_id=f"E{i}")


def _solo_facts(data: Path, tmp: Path, embedder: Any) -> list[str]:
    """What one process alone distills from a copy of the seeded data."""
    copy = tmp / "solo"
    shutil.copytree(data, copy)
    config = HindsightConfig(lifecycle=LifecycleConfig(batch_episodes=3))
    with Hindsight(copy, embedder=embedder, config=config, background_consolidation=False) as hs:
        assert hs.consolidate(NS).status == "done"
        return _active_facts(hs)


def _child(data: Path, go: Path, delay: float, lease_s: float = 60.0) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, str(CHILD), str(data), NS, str(go), str(delay), str(lease_s)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    return proc


# -- the lease itself ----------------------------------------------------------------------------------
def test_lease_has_one_live_owner_and_is_taken_over_once_expired(tmp_path: Path) -> None:
    store = RelationalStore(tmp_path / "l.sqlite3")
    other = RelationalStore(tmp_path / "l.sqlite3")  # a second connection, as another process has
    try:
        assert leases.acquire(store, "job", "a", now=100.0, duration=10.0)
        assert not leases.acquire(other, "job", "b", now=105.0, duration=10.0)
        assert leases.holder(other, "job", now=105.0) == "a"
        assert leases.renew(store, "job", "a", now=108.0, duration=10.0)  # now until 118
        assert not leases.acquire(other, "job", "b", now=115.0, duration=10.0)
        assert leases.acquire(other, "job", "b", now=118.5, duration=10.0)  # expired: b takes over
        assert not leases.renew(store, "job", "a", now=119.0, duration=10.0)  # a lost it and must stop
        leases.release(store, "job", "a")  # not a's any more: no effect
        assert leases.holder(store, "job", now=119.0) == "b"
        leases.release(other, "job", "b")
        assert leases.holder(store, "job", now=119.0) is None
        assert leases.acquire(store, "job", "a", now=119.0, duration=10.0)
    finally:
        store.close()
        other.close()


def test_consolidate_waits_for_a_live_lease_and_takes_an_expired_one_over(
    make_engine: Callable[..., Hindsight], clock: Any
) -> None:
    hs = make_engine(HindsightConfig(lifecycle=LifecycleConfig(consolidation_wait_s=0.0,
                                                               consolidation_lease_s=60.0)),
                     background_consolidation=False)
    hs.record("I'm allergic to peanuts.", NS, session_id="s1")
    now = clock().timestamp()
    assert leases.acquire(hs.store, f"consolidate:{NS}", "another-process", now, 60.0)
    busy = hs.consolidate(NS)
    assert busy.status == "busy" and busy.job_id is None and _active_facts(hs) == []
    clock.advance(seconds=61)
    done = hs.consolidate(NS)
    assert (done.status, done.episodes) == ("done", 1)
    assert _active_facts(hs) == ["The user is allergic to peanuts"]
    assert leases.holder(hs.store, f"consolidate:{NS}", clock().timestamp()) is None  # released at the end


def test_a_run_that_lost_its_lease_commits_nothing_more(
    make_engine: Callable[..., Hindsight], clock: Any
) -> None:
    from hindsight_core.lifecycle.rules import RuleExtractor

    rules = RuleExtractor()
    holder: dict[str, Hindsight] = {}

    class Stalling:
        """Stalls past the lease in its first batch, while another process takes the namespace over."""

        name, uses_llm = "stalling", True
        calls = 0

        def extract(self, episodes: Any, context: Any) -> Any:
            Stalling.calls += 1
            if Stalling.calls == 1:
                clock.advance(seconds=61)
                assert leases.acquire(holder["hs"].store, f"consolidate:{NS}", "another-process",
                                      clock().timestamp(), 60.0)
            return rules.extract(episodes, context)

    config = HindsightConfig(lifecycle=LifecycleConfig(batch_episodes=1, consolidation_lease_s=60.0))
    hs = holder["hs"] = make_engine(config, extractor=Stalling(), background_consolidation=False)
    hs.record("I'm allergic to peanuts.", NS, session_id="s1")
    hs.record("I live in Lisbon.", NS, session_id="s1")
    report = hs.consolidate(NS)
    assert report.status == "failed" and "lease" in (report.error or "")
    assert (report.episodes, _active_facts(hs)) == (0, [])
    assert leases.holder(hs.store, f"consolidate:{NS}", clock().timestamp()) == "another-process"  # not released


# -- real processes ------------------------------------------------------------------------------------
def test_two_processes_consolidating_one_namespace_distill_each_fact_once(tmp_path: Path, embedder: Any) -> None:
    data, go = tmp_path / "data", tmp_path / "go"
    _seed(data, embedder)
    solo = _solo_facts(data, tmp_path, embedder)
    procs = [_child(data, go, delay=0.3), _child(data, go, delay=0.3)]
    go.touch()  # both are open and waiting: they start consolidating together
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        reports.append(json.loads(out.splitlines()[-1]))
    with Hindsight(data, embedder=embedder, background_consolidation=False) as hs:
        facts = _active_facts(hs)
        distilled = hs.store.query("SELECT COUNT(*) FROM consolidated_episodes WHERE namespace = ?", (NS,))[0][0]
        jobs_by_status = hs.stats(NS).namespaces[NS].consolidation_jobs
    print(f"\ntwo consolidators: {len(facts)} active facts (one process alone: {len(solo)}), "
          f"reports {[(r['status'], r['episodes']) for r in reports]}")
    assert len(solo) >= 10
    assert facts == solo
    assert sum(r["episodes"] for r in reports) == len(SENTENCES) == distilled
    assert sorted(r["status"] for r in reports) == ["done", "empty"]
    assert jobs_by_status["running"] == 0


def test_sigkilled_consolidator_is_taken_over_at_once_by_the_next_open(
    tmp_path: Path, embedder: Any, clock: Any
) -> None:
    """The dead owner's lease is still live by the clock, but its process is gone: the next engine
    opened on this host releases it, so ``consolidate`` neither waits ``consolidation_wait_s`` (30 s)
    nor answers ``busy``, and the dead run's job is abandoned, not running for ever."""
    data, go = tmp_path / "data", tmp_path / "go"
    _seed(data, embedder)
    solo = _solo_facts(data, tmp_path, embedder)
    go.touch()
    proc = _child(data, go, delay=600.0)  # its first batch never ends: killed mid-job
    assert proc.stdout is not None and proc.stdout.readline().strip() == "batch"
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    clock.set(datetime.now(UTC))  # the dead owner's 60 s lease is still live at this time
    config = HindsightConfig(lifecycle=LifecycleConfig(batch_episodes=3))
    with Hindsight(data, embedder=embedder, clock=clock, config=config, background_consolidation=False) as hs:
        jobs_by_status = hs.stats(NS).namespaces[NS].consolidation_jobs
        assert (jobs_by_status["running"], jobs_by_status["failed"]) == (0, 1)  # abandoned, not running for ever
        started = time.monotonic()
        report = hs.consolidate(NS)
        assert time.monotonic() - started < config.lifecycle.consolidation_wait_s  # no wait on a dead lease
        assert (report.status, report.episodes) == ("done", len(SENTENCES))
        assert _active_facts(hs) == solo
        jobs_by_status = hs.stats(NS).namespaces[NS].consolidation_jobs
        assert (jobs_by_status["running"], jobs_by_status["failed"], jobs_by_status["done"]) == (0, 1, 1)


def test_only_the_leases_of_dead_processes_on_this_host_are_released(tmp_path: Path) -> None:
    """A live owner (this process, another live process) and another host's owner keep their leases."""
    store = RelationalStore(tmp_path / "leases.db")
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        host = socket.gethostname()
        owners = {"dead": f"{host}:{dead.pid}:aaaa", "mine": leases.new_owner(), "init": f"{host}:1:bbbb",
                  "remote": f"elsewhere.example:{dead.pid}:cccc", "garbled": "no pid here"}
        for name, owner in owners.items():
            assert leases.acquire(store, name, owner, now=0.0, duration=3600.0)
        assert leases.release_dead(store) == ["dead"]
        assert {name for name in owners if leases.holder(store, name, now=1.0)} == {
            "mine", "init", "remote", "garbled"}
    finally:
        store.close()
