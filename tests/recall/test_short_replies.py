"""Issue 12: a short reply ("Hill") is recalled with the question it answers, in both languages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight_core import Hindsight
from tests.recall.conftest import FILLER, record_session

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


def _record(hs: Hindsight, ns: str, turns: list[tuple[str, str]]) -> None:
    record_session(hs, ns, "s1", T0, turns)


@pytest.mark.parametrize(
    ("asked", "reply", "query"),
    [
        ("For account recovery: what is your mother's maiden name?", "Hill", "What is my mother's maiden name?"),
        ("你老家是哪个城市的？", "绵阳", "我老家是哪里的？"),
    ],
)
def test_a_one_word_answer_is_recalled_with_its_question(engine: Hindsight, asked: str, reply: str,
                                                         query: str) -> None:
    _record(engine, "u:reply", [*FILLER, ("assistant", asked), ("user", reply), *FILLER])
    res = engine.recall(query, "u:reply", k=5, now=T0 + timedelta(days=8))
    assert reply in [h.memory.content for h in res.hits]


def test_a_short_reply_to_another_question_stays_out(engine: Hindsight) -> None:
    _record(engine, "u:reply-other", [*FILLER, ("assistant", "What's your favourite colour?"), ("user", "Teal"),
                                      ("assistant", "For account recovery: what is your mother's maiden name?"),
                                      ("user", "Hill"), *FILLER])
    res = engine.recall("What is my mother's maiden name?", "u:reply-other", k=5, now=T0 + timedelta(days=8))
    shown = [h.memory.content for h in res.hits]
    assert "Hill" in shown and "Teal" not in shown
