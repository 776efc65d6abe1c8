"""The background worker: triggered by end_session, every N episodes and a session gone quiet, off the
record() path."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from hindsight_core import Hindsight, HindsightConfig, Layer
from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_core.lifecycle.extractors import RuleExtractor
from hindsight_core.lifecycle.schema import ExtractionContext, ExtractionResult
from hindsight_core.types import Memory


def _semantic(hs: Hindsight, ns: str) -> list[str]:
    return [m.content for m in hs.store.select("namespace = ? AND layer = ?", (ns, Layer.SEMANTIC.value))]


def test_end_session_consolidates_in_the_background(engine: Hindsight) -> None:
    engine.record("我对花生过敏。", "user:w", session_id="s1")
    engine.record("我住在杭州。", "user:w", session_id="s2")
    assert engine.end_session("user:w", "s1") is True
    assert engine.wait_for_consolidation(timeout=60)
    assert _semantic(engine, "user:w") == ["用户对花生过敏"]  # only the session that ended
    jobs = engine.stats("user:w").namespaces["user:w"].consolidation_jobs
    assert (jobs["done"], jobs["pending"], jobs["failed"]) == (1, 0, 0)


def test_every_n_episodes_of_a_session_triggers_a_run(make_engine: Callable[..., Hindsight]) -> None:
    hs = make_engine(HindsightConfig(lifecycle=LifecycleConfig(consolidate_every=3)))
    hs.record("I prefer aisle seats.", "user:n", session_id="s1")
    hs.record("I'm allergic to cats.", "user:n", session_id="s1")
    assert hs.wait_for_consolidation(timeout=60)
    assert _semantic(hs, "user:n") == []  # two episodes: not yet
    hs.record("ok", "user:n", session_id="s1")
    assert hs.wait_for_consolidation(timeout=60)
    assert sorted(_semantic(hs, "user:n")) == ["The user is allergic to cats", "The user prefers aisle seats"]


class _Blocking(RuleExtractor):
    """A slow extractor (think: a remote LLM) that waits until the test lets it go."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def extract(self, episodes: Sequence[Memory], context: ExtractionContext) -> ExtractionResult:
        self.started.set()
        assert self.release.wait(60)
        return super().extract(episodes, context)


def test_record_never_waits_for_consolidation(make_engine: Callable[..., Hindsight]) -> None:
    extractor = _Blocking()
    hs = make_engine(extractor=extractor)
    hs.record("I live in Berlin.", "user:r", session_id="s1")
    hs.end_session("user:r", "s1")
    assert extractor.started.wait(60)
    # the worker is mid-extraction; record() and consolidation stats still answer
    done = threading.Event()
    threading.Thread(target=lambda: (hs.record("I like jazz.", "user:r", session_id="s2"), done.set())).start()
    assert done.wait(60), "record() blocked behind a running consolidation"
    assert hs.stats("user:r").namespaces["user:r"].consolidation_jobs["running"] == 1
    extractor.release.set()
    assert hs.wait_for_consolidation(timeout=60)
    assert _semantic(hs, "user:r") == ["The user lives in Berlin"]


def test_background_off_means_on_demand_only(make_engine: Callable[..., Hindsight]) -> None:
    hs = make_engine(HindsightConfig(lifecycle=LifecycleConfig(consolidate_every=1)), background_consolidation=False)
    hs.record("I prefer tea.", "user:o", session_id="s1")
    assert hs.wait_for_consolidation(timeout=5)
    assert _semantic(hs, "user:o") == []
    assert hs.consolidate("user:o").created == 1


def _until(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_session_gone_quiet_is_consolidated(make_engine: Callable[..., Hindsight]) -> None:
    """An adapter's conversation never calls end_session: a one-off "I'm allergic to peanuts." in a short
    chat must still become a fact (and so be kept while current) once the chat has gone quiet."""
    hs = make_engine(HindsightConfig(lifecycle=LifecycleConfig(consolidate_every=50, consolidate_idle_s=0.5)))
    hs.record("I'm allergic to peanuts.", "user:q", session_id="s1", role="user")
    hs.record("Noted, no peanuts.", "user:q", session_id="s1", role="assistant")
    time.sleep(0.2)
    hs.record("Thanks!", "user:q", session_id="s1", role="user")  # the quiet time starts again
    assert _semantic(hs, "user:q") == []
    assert _until(lambda: _semantic(hs, "user:q") == ["The user is allergic to peanuts"])

    def jobs() -> tuple[int, int]:
        counts = hs.stats("user:q").namespaces["user:q"].consolidation_jobs
        return counts["done"], counts["failed"]

    # the fact is committed a moment before the job is marked done (a loaded machine sees between)
    assert _until(lambda: jobs() != (0, 0))
    assert jobs() == (1, 0)


def test_a_session_that_keeps_talking_is_not_consolidated_for_being_quiet(
    make_engine: Callable[..., Hindsight]
) -> None:
    hs = make_engine(HindsightConfig(lifecycle=LifecycleConfig(consolidate_every=50, consolidate_idle_s=1.0)))
    for text in ("I live in Porto.", "It rains a lot.", "I like the tiles.", "The food is great."):
        hs.record(text, "user:t", session_id="s1", role="user")
        time.sleep(0.4)
    assert _semantic(hs, "user:t") == []  # never quiet for a second
    assert _until(lambda: "The user lives in Porto" in _semantic(hs, "user:t"))


def test_a_session_consolidated_for_going_quiet_counts_its_episodes_afresh(
    make_engine: Callable[..., Hindsight]
) -> None:
    """"Every N episodes" counts the episodes since the session's last run: the quiet-time run took the
    first two, so one more episode is not the third. The process keeps no counter for a quiet session
    (with thousands of users, one per session ever seen, for as long as it ran)."""
    hs = make_engine(HindsightConfig(lifecycle=LifecycleConfig(consolidate_every=3, consolidate_idle_s=2.0)))

    def done() -> int:
        return hs.stats("user:c").namespaces["user:c"].consolidation_jobs.get("done", 0)

    hs.record("I'm allergic to peanuts.", "user:c", session_id="s1", role="user")
    hs.record("I live in Porto.", "user:c", session_id="s1", role="user")
    assert _until(lambda: done() == 1)  # the quiet-time run
    hs.record("I prefer aisle seats.", "user:c", session_id="s1", role="user")
    assert hs.wait_for_consolidation(timeout=60)
    assert done() == 1  # one new episode of three: no run (the quiet time comes two seconds later)
    assert _until(lambda: done() == 2)
    assert "The user prefers aisle seats" in _semantic(hs, "user:c")


def test_quiet_sessions_off(make_engine: Callable[..., Hindsight]) -> None:
    hs = make_engine(HindsightConfig(lifecycle=LifecycleConfig(consolidate_every=50, consolidate_idle_s=0)))
    hs.record("I'm allergic to peanuts.", "user:z", session_id="s1", role="user")
    time.sleep(1.0)
    assert hs.wait_for_consolidation(timeout=5)
    assert _semantic(hs, "user:z") == []
