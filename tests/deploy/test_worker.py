"""``hindsight worker`` as real OS processes on a shared data set (SQLite file + a Chroma server): it
consolidates every namespace the app leaves to it, drains the outbox after an outage, reports its
progress in ``stats()``, stops cleanly on SIGTERM, and a worker SIGKILLed mid-consolidation has its
job taken over by another once the lease expires, with no fact written twice."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_core.store import workers

from .conftest import ChromaServer, service_env

SENTENCES = [
    "I'm allergic to peanuts.", "I live in Lisbon.", "My name is Dana.", "I work as a nurse.",
    "I love jazz music.", "I hate cilantro.", "My budget is $3000.", "I'm vegetarian.", "I play the violin.",
    "I'm learning Korean.", "My favourite color is green.", "I have a dog named Rex.", "I prefer window seats.",
    "I'm allergic to shellfish.", "I love hiking in the mountains.", "I prefer tea over coffee.",
    "I hate loud bars.", "I'm learning to swim.",
]
BATCH = 3


class Worker:
    """One ``hindsight worker`` process; its log (stderr) goes to a file the test reads."""

    def __init__(self, data: Path, chroma_url: str, log: Path, *args: str, delay: float | None = None,
                 env: dict[str, str] | None = None) -> None:
        env = {**service_env(), **(env or {})}
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env["PYTHONPATH"]])
        if delay is not None:
            env["HS_TEST_EXTRACT_DELAY"] = str(delay)
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hindsight_core.cli", "--path", str(data), "--chroma-url", chroma_url,
                 "--no-progress", "worker", "--interval", "0.3", "--min-episodes", "1", *args],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_for(check: Callable[[], Any], what: str, timeout: float = 120.0, proc: Worker | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if proc is not None and proc.proc.poll() is not None:
            raise AssertionError(f"the worker exited ({proc.proc.returncode}) before {what}:\n{proc.text()[-3000:]}")
        if time.monotonic() > deadline:
            tail = proc.text()[-3000:] if proc is not None else ""
            raise AssertionError(f"no {what} within {timeout:.0f}s\n{tail}")
        time.sleep(0.2)


def _facts(hs: Hindsight, namespace: str) -> list[str]:
    return sorted(m.content for m in hs.store.select(
        "namespace = ? AND layer IN ('semantic', 'procedural') AND status = 'active'", (namespace,)))


def _backlog(hs: Hindsight) -> dict[str, int]:
    return {ns: n for ns, n, _ in workers.consolidation_backlog(hs.store)}


def test_worker_consolidates_drains_reports_and_stops_on_sigterm(
    tmp_path: Path, chroma_server: ChromaServer, embedder: Any
) -> None:
    data = tmp_path / "data"
    with Hindsight(data, chroma_url=chroma_server.url, embedder=embedder, background_consolidation=False) as app:
        for i, text in enumerate(SENTENCES):
            app.record(text, f"user:{i % 2}", session_id="s1", source_id=f"E{i}")
        assert _backlog(app) == {"user:0": 9, "user:1": 9}  # the app consolidates nothing itself
        worker = Worker(data, chroma_server.url, tmp_path / "worker.log")
        try:
            def jobs_done() -> bool:
                return all(app.stats(ns).namespaces[ns].consolidation_jobs["done"] >= 1 for ns in ("user:0", "user:1"))

            wait_for(lambda: not _backlog(app) and jobs_done(), "consolidation of both namespaces", proc=worker)
            for ns in ("user:0", "user:1"):
                assert _facts(app, ns), f"nothing distilled in {ns}"
            running = wait_for(lambda: app.stats().workers, "a heartbeat in stats()", proc=worker)
            assert len(running) == 1 and running[0].pid == worker.proc.pid
            assert running[0].episodes_consolidated == len(SENTENCES) and running[0].consolidations >= 2
            shown = subprocess.run(
                [sys.executable, "-m", "hindsight_core.cli", "--path", str(data), "--chroma-url", chroma_server.url,
                 "--no-progress", "stats"], capture_output=True, text=True, env=service_env(), timeout=120,
            )
            assert shown.returncode == 0 and "1 workers" in shown.stdout and str(worker.proc.pid) in shown.stdout
            # Chroma goes away; the app's writes wait in the outbox; the worker drains them when it is back
            chroma_server.kill()
            late = [app.record(f"The parcel for flat {i} is at the front desk.", "user:0", session_id="s2").id
                    for i in range(3)]
            assert app.stats().outbox_pending == 3
            chroma_server.start()
            wait_for(lambda: app.stats().outbox_pending == 0, "the outbox drained by the worker", proc=worker)
            assert set(late) <= app.vectors.ids("user:0", "episodic")
            assert wait_for(lambda: app.stats().workers[0].outbox_applied >= 3, "drain progress", proc=worker)
            wait_for(lambda: not _backlog(app), "the late episodes consolidated", proc=worker)
            worker.signal(signal.SIGTERM)
            assert worker.wait(timeout=60) == 0
        finally:
            worker.kill()
        log = worker.text()
        assert "SIGTERM received, stopping" in log and "stopped after" in log
        assert "consolidated user:0" in log and "outbox: 3 rows applied" in log
        assert "Traceback" not in log
        assert app.stats().workers == []  # a stopped worker leaves no heartbeat
        assert app.store.query("SELECT name FROM leases WHERE name LIKE 'consolidate:%'") == []


def test_sigkilled_worker_job_is_taken_over_without_duplicates(
    tmp_path: Path, chroma_server: ChromaServer, embedder: Any
) -> None:
    data = tmp_path / "data"
    ns = "user:lease"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"lifecycle": {"batch_episodes": BATCH}}), encoding="utf-8")
    with Hindsight(data, chroma_url=chroma_server.url, embedder=embedder, background_consolidation=False) as app:
        for i, text in enumerate(SENTENCES):
            app.record(text, ns, session_id=f"s{i % 2}", source_id=f"E{i}")
    # what one process alone distills from the same data
    solo = tmp_path / "solo"
    shutil.copytree(data, solo)
    with Hindsight(solo, embedder=embedder, background_consolidation=False,
                   config=HindsightConfig(lifecycle=LifecycleConfig(batch_episodes=BATCH))) as alone:
        assert alone.consolidate(ns).status == "done"
        expected = _facts(alone, ns)
    args = ("--lease", "3", "--config", str(config), "--extractor", "slow_extractor:make")
    with Hindsight(data, chroma_url=chroma_server.url, embedder=embedder, background_consolidation=False) as app:
        def consolidated() -> int:
            return int(app.store.query("SELECT COUNT(*) FROM consolidated_episodes WHERE namespace = ?", (ns,))[0][0])

        first = Worker(data, chroma_server.url, tmp_path / "first.log", *args, delay=1.0)
        second: Worker | None = None
        try:
            wait_for(lambda: consolidated() >= 2 * BATCH, "two batches committed", proc=first)
            first.signal(signal.SIGKILL)  # mid-job: its lease stays until it expires
            first.wait(timeout=10)
            done_before = consolidated()
            assert done_before < len(SENTENCES), "the job finished before the kill; slow it down"
            second = Worker(data, chroma_server.url, tmp_path / "second.log", *args, delay=0.2)
            def jobs() -> dict[str, int]:
                return dict(app.store.query("SELECT status, COUNT(*) FROM consolidation_jobs WHERE namespace = ? "
                                            "GROUP BY status", (ns,)))

            wait_for(lambda: consolidated() == len(SENTENCES) and jobs().get("done"), "the job taken over",
                     proc=second)
            found = jobs()
            assert found.get("failed") == 1 and found.get("running", 0) == 0, found  # the dead job: abandoned
            facts = _facts(app, ns)
            assert len(facts) == len(set(facts)), "a fact was written twice"
            assert facts == expected
            fingerprints = [m.fingerprint for m in app.store.select(
                "namespace = ? AND layer = 'semantic' AND status = 'active'", (ns,))]
            assert len(fingerprints) == len(set(fingerprints))
            second.signal(signal.SIGTERM)
            assert second.wait(timeout=60) == 0
        finally:
            first.kill()
            if second is not None:
                second.kill()
        print(f"\nSIGKILL mid-job: {done_before} of {len(SENTENCES)} episodes committed before the kill, "
              f"{len(facts)} facts after the take-over, {len(expected)} alone, 0 duplicates")
        assert "consolidated user:lease" in second.text()
