"""The background consolidation worker: one daemon thread, started on first use.

Triggers (every N new episodes of a session, ``end_session``) only append to an in-memory queue and
signal, so ``record()`` never waits on consolidation. Duplicate requests for a session already queued
are folded into one."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

log = logging.getLogger("hindsight.lifecycle")

Job = tuple[str, str | None, str]  # namespace, session_id, trigger


class ConsolidationWorker:
    def __init__(
        self, run: Callable[[str, str | None, str], object], *, name: str = "hindsight-consolidate"
    ) -> None:
        self._run = run
        self._name = name
        self._queue: deque[Job] = deque()
        self._queued: set[tuple[str, str | None]] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._busy = False

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
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return True

    def queued(self, namespace: str) -> int:
        with self._cond:
            return sum(1 for ns, _, _ in self._queue if ns == namespace)

    def discard(self, namespace: str) -> None:
        with self._cond:
            self._queue = deque(j for j in self._queue if j[0] != namespace)
            self._queued = {k for k in self._queued if k[0] != namespace}

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
                    self._cond.wait()
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
