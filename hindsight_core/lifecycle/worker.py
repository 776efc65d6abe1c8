"""Workers: the in-process background consolidation thread, and the loop of ``hindsight worker``.

:class:`ConsolidationWorker` is one daemon thread, started on first use. Triggers (every N new episodes
of a session, ``end_session``, a session gone quiet for ``idle_s``) only append to an in-memory queue
and signal, so ``record()`` never waits on consolidation. Duplicate requests for a session already
queued are folded into one.

:class:`DeploymentWorker` is the long-running process of a deployment: outbox, consolidation and sweeps
for every namespace, claimed with leases so that many workers can run."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger("hindsight.lifecycle")

Job = tuple[str, str | None, str]  # namespace, session_id, trigger


class ConsolidationWorker:
    def __init__(
        self, run: Callable[[str, str | None, str], object], *, name: str = "hindsight-consolidate",
        idle_s: float = 0.0,
    ) -> None:
        self._run = run
        self._name = name
        self._idle_s = float(idle_s)
        self._queue: deque[Job] = deque()
        self._queued: set[tuple[str, str | None]] = set()
        #: Sessions with episodes not yet consolidated, by when they last got one (oldest first).
        self._active: dict[tuple[str, str], float] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._busy = False

    def touch(self, namespace: str, session_id: str) -> None:
        """A session got a new episode: it is consolidated once it has been quiet for ``idle_s``."""
        if self._idle_s <= 0:
            return
        with self._cond:
            if self._stopping:
                return
            key = (namespace, session_id)
            self._active.pop(key, None)  # re-inserted last: the dict stays in order of last activity
            self._active[key] = time.monotonic()
            self._start()
            self._cond.notify_all()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
            self._thread.start()

    def _queue_quiet(self) -> float | None:
        """Queue the sessions quiet for ``idle_s``; the seconds until the next one is, or None."""
        now = time.monotonic()
        while self._active:
            key, last = next(iter(self._active.items()))
            if now - last < self._idle_s:
                return self._idle_s - (now - last)
            del self._active[key]
            if key not in self._queued:
                self._queued.add(key)
                self._queue.append((key[0], key[1], "idle"))
        return None

    def submit(self, namespace: str, session_id: str | None, trigger: str) -> bool:
        """Queue a run; returns False when the same session is already waiting (or the worker stopped)."""
        with self._cond:
            if self._stopping:
                return False
            key = (namespace, session_id)
            if key in self._queued:
                return False
            self._queued.add(key)
            self._queue.append((namespace, session_id, trigger))
            if session_id is not None:  # consolidated now: no idle run for what it takes
                self._active.pop((namespace, session_id), None)
            self._start()
            self._cond.notify_all()
            return True

    def queued(self, namespace: str) -> int:
        with self._cond:
            return sum(1 for ns, _, _ in self._queue if ns == namespace)

    def discard(self, namespace: str) -> None:
        with self._cond:
            self._queue = deque(j for j in self._queue if j[0] != namespace)
            self._queued = {k for k in self._queued if k[0] != namespace}
            self._active = {k: t for k, t in self._active.items() if k[0] != namespace}

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._busy, timeout)

    def stop(self, timeout: float = 30.0) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    wait = self._queue_quiet()
                    if not self._queue:
                        self._cond.wait(wait)
                if self._stopping:
                    return
                namespace, session_id, trigger = self._queue.popleft()
                self._queued.discard((namespace, session_id))
                self._busy = True
            try:
                self._run(namespace, session_id, trigger)
            except Exception:  # the job row records failures; a bug must not kill the thread
                log.exception("background consolidation of %s/%s failed", namespace, session_id)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


class DeploymentWorker:
    """The loop of ``hindsight worker``: a long-running process that serves every namespace of a shared
    data set (PostgreSQL or SQLite, with a Chroma server and Redis), so app processes can leave the
    work to it (``Hindsight(..., background_consolidation=False)``).

    Each pass drains the outbox, consolidates the namespaces whose unconsolidated episodes reached
    ``min_episodes`` (or waited ``max_wait_s``), and runs the sweep when it is due. Every piece is
    claimed in the relational store, so any number of workers (and app processes) can run side by side:
    outbox rows batch by batch (``RelationalStore.claim``: no row is applied by two processes at once, a
    dead process's claims are taken over when they expire), a namespace under the
    engine's own consolidation lease (a busy namespace is skipped, a dead worker's is taken over once
    its lease expires), and the sweep under ``sweep:schedule``, which is kept, not released, for
    ``sweep_interval_s``: the lease is the schedule, so the workers sweep once per interval between
    them. Progress goes to the log and to a heartbeat every process reads in ``stats().workers``.

    :meth:`stop` (the command wires SIGTERM and SIGINT to it) ends the loop after the step in progress:
    a consolidation finishes its job and releases its lease, nothing is left half-claimed."""

    SWEEP_LEASE = "sweep:schedule"

    def __init__(
        self,
        engine: Any,
        *,
        interval_s: float = 2.0,
        min_episodes: int | None = None,
        max_wait_s: float = 300.0,
        sweep_interval_s: float = 3600.0,
    ) -> None:
        from hindsight_core.store import leases

        self.engine = engine
        self.interval_s = float(interval_s)
        every = engine.config.lifecycle.consolidate_every
        self.min_episodes = max(1, int(every if min_episodes is None else min_episodes) or 1)
        self.max_wait_s = float(max_wait_s)
        self.sweep_interval_s = float(sweep_interval_s)
        self.owner = leases.new_owner()
        self._stop = threading.Event()
        self.passes = 0
        self.status: dict[str, Any] = {
            "owner": self.owner,
            "host": self.owner.split(":", 1)[0],
            "pid": os.getpid(),
            "started_at": self._now(),
            "heartbeat_at": self._now(),
            # a heartbeat older than this is a worker that died (a pass may hold one long consolidation)
            "stale_after": max(3 * self.interval_s, engine.config.lifecycle.consolidation_lease_s) + 5.0,
            "state": "starting",
            "passes": 0,
            "outbox_applied": 0,
            "consolidations": 0,
            "episodes_consolidated": 0,
            "memories_created": 0,
            "sweeps": 0,
            "last_error": None,
        }

    def _now(self) -> float:
        return float(self.engine.now().timestamp())

    # -- control ---------------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def run(self, *, once: bool = False) -> None:
        """Work until :meth:`stop` (or one pass with ``once``), then leave: leases released, heartbeat
        removed."""
        from hindsight_core.store import workers

        log.info("worker %s started (interval %.1fs, consolidate at %d episodes or after %.0fs, sweep every %.0fs)",
                 self.owner, self.interval_s, self.min_episodes, self.max_wait_s, self.sweep_interval_s)
        try:
            while not self.stopping:
                self.run_pass()
                if once:
                    break
                self._stop.wait(self.interval_s)
        finally:
            self._leave(workers)

    def _leave(self, workers: Any) -> None:
        try:
            workers.gone(self.engine.store, self.owner)
        except Exception as exc:  # the store is gone: the heartbeat goes stale by itself
            log.warning("worker %s: could not remove its heartbeat: %s", self.owner, exc)
        log.info("worker %s stopped after %d passes", self.owner, self.passes)

    # -- one pass --------------------------------------------------------------------------------
    def run_pass(self) -> None:
        """Drain, consolidate, sweep; a backend failure is logged and retried on the next pass."""
        from hindsight_core.errors import HindsightError

        for step in (self._drain, self._consolidate, self._sweep):
            if self.stopping:
                break
            try:
                step()
            except HindsightError as exc:
                self.status["last_error"] = f"{type(exc).__name__}: {exc}"[:500]
                log.warning("worker %s: %s failed, retrying next pass: %s", self.owner, step.__name__[1:], exc)
        self.passes += 1
        self.status["passes"] = self.passes
        self._beat("idle" if not self.stopping else "stopping")

    def _beat(self, state: str) -> None:
        from hindsight_core.store import workers

        self.status["state"] = state
        self.status["heartbeat_at"] = self._now()
        try:
            workers.beat(self.engine.store, self.owner, self.status)
        except Exception as exc:
            log.warning("worker %s: heartbeat not written: %s", self.owner, exc)

    def _drain(self) -> None:
        if self.engine.store.pending_count() == 0:
            return
        self._beat("draining the outbox")
        report = self.engine.outbox.apply(None)  # batch by batch, claimed: other drainers take other rows
        self.status["outbox_applied"] += report.applied
        if report.applied or report.failed:
            log.info("outbox: %d rows applied, %d kept (%s)", report.applied, report.failed,
                     "; ".join(f"{t}: {e}" for t, e in report.errors.items()) or "no errors")

    def _consolidate(self) -> None:
        from hindsight_core.store import workers

        now = self._now()
        for namespace, waiting, oldest in workers.consolidation_backlog(self.engine.store):
            if self.stopping:
                return
            if waiting < self.min_episodes and now - oldest < self.max_wait_s:
                continue
            self._beat(f"consolidating {namespace}")
            report = self.engine.consolidate(namespace)
            if report.status == "busy":
                log.debug("consolidation of %s skipped: %s", namespace, report.error)
                continue
            self.status["consolidations"] += 1
            self.status["episodes_consolidated"] += report.episodes
            self.status["memories_created"] += report.created
            if report.status == "failed":
                self.status["last_error"] = report.error
                log.warning("consolidated %s: job %s failed after %d episodes: %s", namespace, report.job_id,
                            report.episodes, report.error)
            else:
                log.info("consolidated %s: job %s, %d episodes, %d memories created, %d merged, %d superseded",
                         namespace, report.job_id, report.episodes, report.created, report.merged,
                         report.superseded)

    def _sweep(self) -> None:
        from hindsight_core.store import leases, workers

        # killed workers drop out of stats(): the sweeper prunes their heartbeats
        workers.live(self.engine.store, self._now(), prune=True)
        # held, not released: nobody sweeps again until the interval has passed
        if not leases.acquire(self.engine.store, self.SWEEP_LEASE, self.owner, self._now(), self.sweep_interval_s):
            return
        self._beat("sweeping")
        report = self.engine.sweep()
        self.status["sweeps"] += 1
        log.info("sweep: %d expired, %d cooled, %d archived%s", report.expired, report.cooled, report.archived,
                 f", errors: {report.errors}" if report.errors else "")
