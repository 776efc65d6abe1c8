"""Why each recall candidate was or was not injected: one plain wording for the CLI and the inspector,
read off a traced result (hits, trace.folded / replaced / updated, the floor and the final scores)."""

from __future__ import annotations

from datetime import UTC, datetime

from hindsight_core.recall.trace import FinalScore, FloorDecision, RecallTrace, TraceCandidate
from hindsight_core.recall.types import QueryAnalysis, RecallHit, RecallResult
from hindsight_core.recall.verdicts import Outcome, verdicts
from hindsight_core.types import Memory


def _hit(mid: str) -> RecallHit:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    memory = Memory(id=mid, namespace="user:a", content=mid, occurred_at=at, created_at=at, updated_at=at)
    return RecallHit(memory=memory, score=1.0)


def test_each_candidate_gets_one_plain_verdict_by_precedence() -> None:
    fused = ["hit", "echo", "low", "full", "newer"]
    trace = RecallTrace(
        channels={"vector": [TraceCandidate(id=m, rank=r, score=0.0)
                             for r, m in enumerate([*fused, "older", "stale", "far"], start=1)]},
        fused=[TraceCandidate(id=m, rank=r, score=0.0) for r, m in enumerate(fused, start=1)],
        replaced={"newer": "older"},
        updated={"stale": "hit"},
        floor=[FloorDecision(id=m, z=0.0, coverage=0.0, strength=0.0, kept=m != "low") for m in fused],
        final=[FinalScore(id=m, relevance=0.0, score=0.0, injected=m == "hit")
               for m in ["hit", "echo", "full", "newer"]],
        folded={"echo": "hit"},
    )
    result = RecallResult(query="q", namespace="user:a", hits=[_hit("hit")], analysis=QueryAnalysis(query="q"),
                          trace=trace)
    found = {v.id: v for v in verdicts(result)}
    assert [v.id for v in verdicts(result)][:5] == fused
    assert found["hit"].words() == "injected" and found["hit"].injected
    assert found["echo"].outcome is Outcome.FOLDED and found["echo"].words(str.upper) == "folded into HIT"
    assert found["low"].words() == "below the relevance floor"
    assert found["full"].words() == "over k or the token budget"
    assert found["older"].words() == "superseded by newer" and found["stale"].words() == "superseded by hit"
    assert found["far"].words() == "ranked too low in fusion to be considered"
    assert found["newer"].outcome is Outcome.OVER_LIMIT
    assert found["echo"].as_dict() == {"id": "echo", "outcome": "folded", "other": "hit", "why": "folded into hit"}


def test_without_a_trace_only_the_hits_are_known() -> None:
    hits = [_hit("a"), _hit("b")]
    result = RecallResult(query="q", namespace="user:a", hits=hits, analysis=QueryAnalysis(query="q"))
    assert [(v.id, v.outcome) for v in verdicts(result)] == [("a", Outcome.INJECTED), ("b", Outcome.INJECTED)]
