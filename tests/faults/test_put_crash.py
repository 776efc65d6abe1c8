"""SIGKILL during a LangGraph ``put`` loop: the key is never missing and holds the last acknowledged
value or the one being written when the process died."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_langchain import HindsightStore

WRITER = Path(__file__).with_name("put_writer.py")
NAMESPACE = ("faults", "u1")
KEY = "counter"
TRIALS = 6


def _run_and_kill(data: Path, start: int, rng: random.Random) -> int:
    """Run the writer until it has acknowledged a random number of puts, then SIGKILL it a random
    moment later (mostly mid-put); returns the last acknowledged value."""
    proc = subprocess.Popen([sys.executable, str(WRITER), str(data), str(start)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        last = None
        for _ in range(rng.randint(1, 6)):
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "writer exited early"
            last = int(line)
        time.sleep(rng.uniform(0.0, 0.04))
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    acked = [int(x) for x in rest.split()]  # acknowledged before the signal landed, read after
    assert last is not None
    return acked[-1] if acked else last


@pytest.mark.slow
def test_sigkill_during_put_loop_never_loses_the_item(tmp_path: Path, embedder) -> None:
    data = tmp_path / "data"
    rng = random.Random(20261201)
    start, acknowledged, found, missing, lost = 0, 0, 0, 0, 0
    for _ in range(TRIALS):
        last = _run_and_kill(data, start, rng)
        acknowledged += 1
        with Hindsight(data, embedder=embedder, background_consolidation=False) as hs:
            item = HindsightStore(engine=hs).get(NAMESPACE, KEY)
            if item is None:
                missing += 1
            else:
                found += 1
                lost += item.value["n"] not in (last, last + 1)
                # one memory under the key, and the indexes agree with it once reconciled
                stored = hs.find(HindsightStore(engine=hs).engine_namespace(NAMESPACE), source_ids=[KEY])
                assert len(stored) == 1
                assert stored[0].content == f"the counter reads {item.value['n']}"
        start = last + 2  # the next trial writes values never written before
    print(f"\nput crash: {TRIALS} trials, {acknowledged} acknowledged keys, {found} found, {missing} missing, "
          f"{lost} holding neither the last acknowledged value nor the next")
    assert (found, missing, lost) == (acknowledged, 0, 0)
