"""The deployment for real: 4 app processes recording (with ``source_id``s) and recalling at the same
time, 2 ``hindsight worker`` processes consolidating, all on PostgreSQL + a Chroma server + Redis.
Afterwards every acknowledged record is in PostgreSQL, Chroma and Redis, no memory or fact exists
twice (the facts equal what one process distills alone from the same events), no caller saw an
error, the outbox is empty, and recall in each namespace returns what a fresh single process returns
from the same data (the namespace exported from the deployment and imported into an embedded engine,
which builds its own indexes): the Chroma server and Redis hold what one process alone would.

N records per app process: ``HINDSIGHT_DEPLOY_N`` (CI-sized default 30; the issue's figure is 1000:
``HINDSIGHT_DEPLOY_N=1000 pytest -s tests/deploy/test_multiprocess.py``, figures in docs/deploy.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_core.store import workers

from .app_child import event
from .conftest import ChromaServer, service_env
from .test_worker import Worker, wait_for

APPS = 4
N = int(os.environ.get("HINDSIGHT_DEPLOY_N", "30"))
CHILD = Path(__file__).with_name("app_child.py")


def _queries(n: int) -> list[str]:
    """Questions about the recorded events: the facts and a few of the notes."""
    notes = [f"Which desk holds parcel {i * 7919 % 10007}?" for i in (1, n // 2 + 1, n - 1) if i % 5]
    return ["What am I allergic to?", "Where do I live?", "What music do I like?", *notes]


def _recalled(hs: Hindsight, namespace: str, now: datetime) -> list[list[str]]:
    """Recall's hits for every query, with no side effect (``track=False``) at one instant."""
    results = [hs.recall(q, namespace, now=now, track=False) for q in _queries(N)]
    assert all(r.degraded == [] for r in results)
    return [[h.memory.id for h in r.hits] for r in results]


def _facts(hs: Hindsight, namespace: str) -> list[str]:
    return sorted(m.content for m in hs.store.select(
        "namespace = ? AND layer IN ('semantic', 'procedural') AND status = 'active'", (namespace,)))


@pytest.mark.slow
@pytest.mark.redis
def test_four_apps_two_workers_on_postgres_chroma_redis(
    tmp_path: Path, chroma_server: ChromaServer, postgres_url: str, redis_url: str, embedder: Any
) -> None:
    env = {**service_env(), "HINDSIGHT_DATABASE_URL": postgres_url, "HINDSIGHT_CHROMA_URL": chroma_server.url,
           "HINDSIGHT_REDIS_URL": redis_url}
    run = uuid.uuid4().hex[:8]
    namespaces = [f"deploy:{run}:app{i}" for i in range(APPS)]
    started = time.monotonic()
    # the schema exists before the processes race to open it
    Hindsight(tmp_path / "init", database_url=postgres_url, chroma_url=chroma_server.url, redis_url=redis_url,
              embedder=embedder, background_consolidation=False).close()
    worker_args = ("--min-episodes", "10", "--max-wait", "1", "--lease", "10")
    pool = [Worker(tmp_path / f"w{i}", chroma_server.url, tmp_path / f"worker{i}.log", *worker_args, env=env)
            for i in range(2)]
    apps = [subprocess.Popen([sys.executable, str(CHILD), str(tmp_path / f"app{i}"), ns, str(N)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for i, ns in enumerate(namespaces)]
    try:
        outputs = [p.communicate(timeout=900) for p in apps]
        for p, (_, err) in zip(apps, outputs, strict=True):
            assert p.returncode == 0, err[-3000:]
        results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
        recorded_s = time.monotonic() - started
        with Hindsight(tmp_path / "check", database_url=postgres_url, chroma_url=chroma_server.url,
                       redis_url=redis_url, embedder=embedder, background_consolidation=False) as hs:
            def settled() -> bool:
                backlog = {ns for ns, _, _ in workers.consolidation_backlog(hs.store)} & set(namespaces)
                running = hs.store.query(
                    "SELECT COUNT(*) FROM consolidation_jobs WHERE status = 'running'")[0][0]
                return not backlog and not running and hs.stats().outbox_pending == 0

            wait_for(settled, "the workers done", timeout=600, proc=pool[0])
            settled_s = time.monotonic() - started
            heartbeats = hs.stats().workers
            assert len(heartbeats) == 2
            for w in pool:
                w.signal(signal.SIGTERM)
            assert [w.wait(timeout=120) for w in pool] == [0, 0]
            errors = [e for r in results for e in r["errors"]]
            acknowledged = sum(len(r["acknowledged"]) for r in results)
            found = {"postgres": 0, "chroma": 0, "redis": 0}
            duplicates = 0
            facts_of: dict[str, list[str]] = {}
            recall_differs: list[str] = []
            now = datetime.now(UTC)
            fresh = Hindsight(tmp_path / "fresh", embedder=embedder, background_consolidation=False)
            for ns, result in zip(namespaces, results, strict=True):
                ids = set(result["acknowledged"])
                assert len(ids) == N
                episodes = hs.store.select("namespace = ? AND layer = 'episodic'", (ns,))
                duplicates += len(episodes) - len({m.source_id for m in episodes})
                found["postgres"] += len(ids & {m.id for m in episodes})
                indexed = {m.id for m in episodes if m.indexed and m.status.value == "active"}
                found["chroma"] += len(ids & hs.vectors.ids(ns, "episodic") | (ids - indexed))
                found["redis"] += len(ids & {m for m, _ in hs.activation.top(ns, "episodic", 10 * N)} | (ids - indexed))
                facts = facts_of[ns] = _facts(hs, ns)
                duplicates += len(facts) - len(set(facts))
                # a fresh single process holding the same data recalls the same memories
                fresh.import_namespace(hs.export_namespace(ns))
                deployed, alone_hits = _recalled(hs, ns, now), _recalled(fresh, ns, now)
                assert any(deployed)
                if deployed != alone_hits:
                    recall_differs.append(ns)
                hs.forget_namespace(ns)  # leave the shared Redis and Chroma as they were
            fresh.close()
            outbox = hs.stats().outbox_pending
        # what one process alone distills from the same events
        config = HindsightConfig(lifecycle=LifecycleConfig())
        with Hindsight(tmp_path / "solo", embedder=embedder, config=config, background_consolidation=False) as solo:
            for i in range(N):
                solo.record(event(i), "solo", session_id=f"s{i // 50}", source_id=f"solo#{i}")
            assert solo.consolidate("solo").status == "done"
            alone = _facts(solo, "solo")
        print(f"\n{APPS} apps x {N} records, 2 workers: acknowledged {acknowledged}, found {found}, "
              f"duplicates {duplicates}, caller errors {len(errors)}, outbox {outbox}, recalls "
              f"{sum(r['recalls'] for r in results)}; recorded in {recorded_s:.0f}s, settled in {settled_s:.0f}s; "
              f"facts per namespace {len(facts)} (alone {len(alone)}); recall differs from a fresh single "
              f"process in {len(recall_differs)} of {APPS} namespaces")
        assert errors == []
        assert found == dict.fromkeys(found, APPS * N) and acknowledged == APPS * N
        assert duplicates == 0 and outbox == 0
        assert all(facts == alone for facts in facts_of.values())
        assert recall_differs == []
        for w in pool:
            assert "Traceback" not in w.text()
    finally:
        for p in apps:
            if p.poll() is None:
                p.kill()
        for w in pool:
            w.kill()


@pytest.mark.slow
@pytest.mark.redis
def test_chroma_server_killed_and_restarted_under_two_apps_and_a_worker(
    tmp_path: Path, chroma_server: ChromaServer, postgres_url: str, redis_url: str, embedder: Any
) -> None:
    """The vector index goes away while two app processes record and a worker drains: the apps see no
    error (writes acknowledged, their vector work kept in the outbox, recall degraded), and once the
    server is back the processes between them drain the backlog, each row claimed by one of them."""
    env = {**service_env(), "HINDSIGHT_DATABASE_URL": postgres_url, "HINDSIGHT_CHROMA_URL": chroma_server.url,
           "HINDSIGHT_REDIS_URL": redis_url}
    n, run = 20, uuid.uuid4().hex[:8]
    namespaces = [f"deploy:{run}:chroma{i}" for i in range(2)]
    with Hindsight(tmp_path / "check", database_url=postgres_url, chroma_url=chroma_server.url,
                   redis_url=redis_url, embedder=embedder, background_consolidation=False) as hs:
        worker = Worker(tmp_path / "w", chroma_server.url, tmp_path / "worker.log", "--min-episodes", "1000",
                        env=env)
        apps = [subprocess.Popen([sys.executable, str(CHILD), str(tmp_path / f"app{i}"), ns, str(n)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                for i, ns in enumerate(namespaces)]
        try:
            def per_app() -> list[int]:
                return [int(hs.store.query("SELECT COUNT(*) FROM memories WHERE namespace = ?", (ns,))[0][0])
                        for ns in namespaces]

            def stored() -> int:
                return sum(per_app())

            # every process has opened its engine (a server down at open is refused, as it should be)
            wait_for(lambda: hs.stats().workers and min(per_app()) >= 2, "the apps recording", timeout=300,
                     proc=worker)
            chroma_server.kill()
            killed_at = stored()
            wait_for(lambda: stored() >= killed_at + 4 or all(p.poll() is not None for p in apps),
                     "writes acknowledged during the outage", timeout=300, proc=worker)
            during = stored() - killed_at
            chroma_server.start()  # same directory, same port
            outputs = [p.communicate(timeout=600) for p in apps]
            for p, (_, err) in zip(apps, outputs, strict=True):
                assert p.returncode == 0, err[-3000:]
            results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
            wait_for(lambda: hs.stats().outbox_pending == 0, "the backlog drained", timeout=300, proc=worker)
            worker.signal(signal.SIGTERM)
            assert worker.wait(timeout=120) == 0
            errors = [e for r in results for e in r["errors"]]
            missing = 0
            for ns, result in zip(namespaces, results, strict=True):
                ids = set(result["acknowledged"])
                assert len(ids) == n
                indexed = {m.id for m in hs.store.select("namespace = ? AND layer = 'episodic'", (ns,))}
                missing += len(ids - indexed) + len(ids - hs.vectors.ids(ns, "episodic"))
                missing += len(ids - {m for m, _ in hs.activation.top(ns, "episodic", 10 * n)})
                hs.forget_namespace(ns)
            print(f"\nChroma killed with {killed_at} records stored, {during} acknowledged during the outage: "
                  f"{sum(len(r['acknowledged']) for r in results)} acknowledged, {missing} missing from "
                  f"PostgreSQL/Chroma/Redis, {len(errors)} caller errors, outbox {hs.stats().outbox_pending}")
            assert during > 0 and errors == [] and missing == 0
            assert hs.store.parked() == []
            assert "Traceback" not in worker.text()
        finally:
            for p in apps:
                if p.poll() is None:
                    p.kill()
            worker.kill()
