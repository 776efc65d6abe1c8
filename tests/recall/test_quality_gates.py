"""Issue 12: the salience gate keeps short answers with content, and time expressions about the
future of a request do not turn into a filter on memories."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight_core.recall.analysis import find_time_window
from hindsight_core.text.salience import is_small_talk

EVENING = datetime(2026, 3, 11, 19, 30, tzinfo=UTC)
MORNING = datetime(2026, 3, 11, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("text", ["Hill", "Hello Kitty", "Lola", "Hilton", "Holly", "希尔", "Helen", "lhasa"])
def test_short_answers_with_content_are_not_small_talk(text: str) -> None:
    assert not is_small_talk(text)


@pytest.mark.parametrize("text", ["haha", "hahaha", "hehe", "lol", "lolol", "哈哈哈", "嘿嘿", "hihi", "ok", "好的呢"])
def test_laughter_and_acknowledgements_still_are(text: str) -> None:
    assert is_small_talk(text)


@pytest.mark.parametrize(
    ("text", "now"),
    [
        ("Recommend a restaurant for tonight", MORNING),
        ("Recommend a restaurant for tonight", EVENING),
        ("推荐一家今晚能去的餐厅", EVENING),
        ("What should I cook for dinner today?", MORNING),
        ("Plan my workout for this week", MORNING),
        ("今天吃什么好？", MORNING),
        ("Book a table for tomorrow", MORNING),
    ],
)
def test_the_time_of_a_request_is_not_a_window_on_memories(text: str, now: datetime) -> None:
    assert find_time_window(text, now) is None


@pytest.mark.parametrize(
    ("text", "now"),
    [
        ("What did I eat today?", EVENING),
        ("今天我吃了什么？", EVENING),
        ("What did we talk about this week?", EVENING),
        ("What did I say yesterday?", MORNING),
        ("昨天我说了什么", MORNING),
    ],
)
def test_questions_about_the_past_keep_their_window(text: str, now: datetime) -> None:
    assert find_time_window(text, now) is not None
