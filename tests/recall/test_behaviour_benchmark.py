"""``benchmarks/behaviour.py`` judges each question by its kind: a tiny suite whose outcomes are known
runs through the benchmark's own scenario runner, so a change to the judging (a ``forbid`` hit or an
``expect_any`` miss that stops failing, a ``filler`` check that starts reading expectations) shows here,
not as a silently different figure on the shared suites."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hindsight_core.embeddings.e5 import E5Embedder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def behaviour() -> ModuleType:
    """The benchmark script as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("behaviour_benchmark", ROOT / "benchmarks" / "behaviour.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


AT = "2026-02-02T09:00:00+00:00"
SUITE: list[dict[str, Any]] = [
    {
        "id": "t-en-job", "lang": "en", "tags": ["paraphrase"], "namespace": "user:callum",
        "sessions": [{"session_id": "s1", "start": "2026-01-19T18:30:00+00:00", "turns": [
            ["user", "Evening! I'm Callum, a pharmacist in Edinburgh."],
            ["assistant", "Hi Callum, good to meet you. How can I help?"],
            ["user", "What's a good whisky for a beginner?"],
            ["assistant", "A gentle Speyside like Glenfiddich 12 is a friendly start."],
        ]}],
        "queries": [
            {"kind": "answerable", "at": AT, "session_id": "q1", "text": "What's my occupation?",
             "expect_any": ["pharmacist"]},
            # the same recall with the expected word forbidden: a forbid hit fails an answerable question
            {"kind": "answerable", "at": AT, "session_id": "q2", "text": "What's my occupation?",
             "expect_any": ["pharmacist"], "forbid": ["pharmacist"]},
            # a word never stated: an expect_any miss fails it
            {"kind": "answerable", "at": AT, "session_id": "q3", "text": "What's my occupation?",
             "expect_any": ["astronaut"]},
        ],
    },
    {
        "id": "t-en-filler", "lang": "en", "tags": ["filler"], "namespace": "user:jo",
        "sessions": [{"session_id": "s1", "start": "2026-01-20T20:00:00+00:00", "turns": [
            ["user", "Which houseplants survive a dark flat?"],
            ["assistant", "Snake plants and ZZ plants cope well with low light."],
            ["user", "lol"],
            ["assistant", "A pothos is nearly unkillable too."],
        ]}],
        "queries": [
            # judged on forbid alone: the expectation it carries is ignored
            {"kind": "filler", "at": AT, "session_id": "q1", "text": "Which plants did you suggest for low light?",
             "forbid": ['"lol"'], "expect_any": ["never stated"]},
        ],
    },
]


def test_the_runner_judges_each_question_by_its_kind(
    behaviour: ModuleType, embedder: E5Embedder, tmp_path: Path
) -> None:
    runs = [behaviour.run_scenario(s, tmp_path / s["id"], embedder) for s in SUITE]
    assert [r.error for r in runs] == [None, None]
    figures = behaviour.figures(runs)
    assert {k: (v["passed"], v["total"]) for k, v in figures["per_kind"].items()} == {
        "answerable": (1, 3), "filler": (1, 1),
    }
    answerable = runs[0].questions
    assert "pharmacist" in answerable[0].prompt  # what made q1 pass is what fails q2
    assert answerable[1].problems == ["forbidden ['pharmacist']"]
    assert answerable[2].problems == ["none of ['astronaut']"]
    assert figures["overall"] == {"passed": 2, "total": 4, "rate": 0.5}
    assert figures["scenarios"] == {"passed": 1, "total": 2}
    assert figures["per_lang"] == {"en": {"passed": 2, "total": 4, "rate": 0.5}}
    assert runs[0].turns == 4 and runs[0].replayed_consolidations == 0


def test_judging_by_kind_without_an_engine(behaviour: ModuleType) -> None:
    """No engine: a forbidden whole turn in the injected text fails the forbid-only kinds, an empty
    prompt passes them whatever they forbid, and expectations never count for them."""
    query = {"forbid": ['"lol"'], "expect_any": ["never stated"]}
    prompt = 'Relevant memories:\n- [2026-01-20] "lol"'
    assert behaviour.judge("filler", query, prompt) == ["forbidden ['\"lol\"']"]
    assert behaviour.judge("offtopic", query, prompt) == ["injected ['\"lol\"']"]
    assert behaviour.judge("tenant", query, "") == []
    assert behaviour.judge("stale", {"expect_any": ["Bristol"], "forbid": ["Manchester"]},
                           "moved to Bristol from Manchester") == ["forbidden ['Manchester']"]


def test_unanswerable_questions_are_counted_and_reinforce_nothing(
    behaviour: ModuleType, embedder: E5Embedder, tmp_path: Path
) -> None:
    """``--unanswerable``: each question is asked once per scenario; one given any memory counts. They
    are asked after the suite's own questions and untracked, so they change none of its figures."""
    plain = behaviour.run_scenario(SUITE[0], tmp_path / "plain", embedder)
    asked = behaviour.run_scenario(SUITE[0], tmp_path / "asked", embedder,
                                   unanswerable=["What's my blood type?", "How far is Jupiter from the Sun?"])
    assert (asked.unanswerable_asked, plain.unanswerable_asked) == (2, 0)
    assert asked.unanswerable_given == 1  # the question about the asker gets their self-introduction
    assert behaviour.figures([asked])["unanswerable_given"] == {"given": 1, "asked": 2}
    assert [q.prompt for q in asked.questions] == [q.prompt for q in plain.questions]
