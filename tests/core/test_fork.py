"""An engine used in a process that inherited it by ``fork`` (gunicorn ``--preload``, Celery prefork,
``multiprocessing`` with a module-level engine) raises :class:`EngineForkedError` at once, sync and async,
instead of hanging inside the parent's Chroma client or opening a second embedded Chroma on the same
directory; the child's ``close`` leaves the parent's connections and directory lock alone."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import EngineForkedError, Hindsight, HindsightError

NS = "user:fork"


def _use_in_child(hs: Hindsight, out: Any) -> None:
    """Runs in the forked child: every call must raise the project's error, none may block."""
    seen: list[str] = []
    for call in (lambda: hs.record("from the child", NS), lambda: hs.recall("what did I say?", NS),
                 lambda: asyncio.run(hs.arecall("what did I say?", NS)), lambda: hs.stats()):
        try:
            call()
            seen.append("returned")
        except EngineForkedError as exc:
            seen.append(f"forked: {exc}")
        except Exception as exc:  # anything else is a failure the parent reports
            seen.append(f"{type(exc).__name__}: {exc}")
    hs.close()  # must not close or unlock what the parent holds
    out.send(seen)
    out.close()


def test_a_forked_child_is_told_at_once_and_the_parent_goes_on(tmp_path: Path, embedder: Any) -> None:
    context = multiprocessing.get_context("fork")
    hs = Hindsight(tmp_path / "data", embedder=embedder, background_consolidation=False)
    try:
        hs.record("I'm allergic to peanuts.", NS, session_id="s1")
        hs.reconcile()  # the parent's Chroma client is open: what a forked child used to hang in
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_use_in_child, args=(hs, send))
        child.start()
        send.close()
        assert receive.poll(60), "the forked child did not answer within 60 s"
        seen = receive.recv()
        child.join(30)
        assert child.exitcode == 0
        assert len(seen) == 4 and all(s.startswith("forked: ") for s in seen), seen
        assert "opened in process" in seen[0] and "one engine per process" in seen[0]
        assert issubclass(EngineForkedError, HindsightError)
        # the parent's engine is untouched: it writes, recalls and holds its directory
        hs.record("I work night shifts.", NS, session_id="s1")
        assert "peanuts" in hs.recall("What am I allergic to?", NS, track=False).to_prompt()
        assert len(hs.find(NS)) == 2
    finally:
        hs.close()
    with Hindsight(tmp_path / "data", embedder=embedder, background_consolidation=False) as again:
        assert len(again.find(NS)) == 2


@pytest.mark.parametrize("closed", [False, True])
def test_the_opening_process_is_not_refused(tmp_path: Path, embedder: Any, closed: bool) -> None:
    hs = Hindsight(tmp_path / "data", embedder=embedder, background_consolidation=False)
    hs.record("a note", NS)
    if closed:
        hs.close()
        with pytest.raises(Exception) as info:
            hs.record("after close", NS)
        assert not isinstance(info.value, EngineForkedError)
    else:
        assert hs.find(NS)
        hs.close()
