"""Query analysis: history cues and time windows in English and Chinese, entities."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight_core.recall.analysis import analyze, find_history_cues, find_time_window, speaks_of_the_past

# A Wednesday.
NOW = datetime(2026, 3, 11, 15, 30, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "cues"),
    [
        ("上次你说那套方案到底包不包含税费？", ["上次"]),
        ("我记得之前聊过这个", ["之前", "聊过", "我记得"]),
        ("你说过我该怎么做？", ["你说过"]),
        ("Last time you said the plan included tax", ["last time", "you said"]),
        ("Do you remember what I asked you to call me?", ["remember"]),
        ("What did we discuss earlier?", ["earlier"]),
        ("推荐一家餐厅", []),
        ("What's the weather like?", []),
    ],
)
def test_history_cues(text: str, cues: list[str]) -> None:
    assert sorted(find_history_cues(text)) == sorted(cues)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("昨天我说了什么", day(2026, 3, 10), day(2026, 3, 11)),
        ("前天的会议", day(2026, 3, 9), day(2026, 3, 10)),
        ("上周你推荐的书", day(2026, 3, 2), day(2026, 3, 9)),
        ("上个月的账单", day(2026, 2, 1), day(2026, 3, 1)),
        ("去年的旅行", day(2025, 1, 1), day(2026, 1, 1)),
        ("what did I say yesterday", day(2026, 3, 10), day(2026, 3, 11)),
        ("the book you recommended last week", day(2026, 3, 2), day(2026, 3, 9)),
        ("my bill last month", day(2026, 2, 1), day(2026, 3, 1)),
        ("上周三我们聊了什么", day(2026, 3, 4), day(2026, 3, 5)),
        ("last friday", day(2026, 3, 6), day(2026, 3, 7)),
    ],
)
def test_relative_windows_are_calendar_units(text: str, start: datetime, end: datetime) -> None:
    window = find_time_window(text, NOW)
    assert window is not None
    assert (window.start, window.end) == (start, end)


@pytest.mark.parametrize("text", ["3 days ago I told you", "三天前我告诉过你", "两周前的事", "2 weeks ago"])
def test_ago_windows_contain_the_day_named(text: str) -> None:
    window = find_time_window(text, NOW)
    assert window is not None
    n_days = 14 if ("周" in text or "week" in text) else 3
    target = NOW - timedelta(days=n_days)
    assert window.start <= target < window.end
    assert window.end - window.start <= timedelta(days=8)


def test_month_names_resolve_to_the_last_such_month() -> None:
    window = find_time_window("what happened in May", NOW)
    assert window is not None and (window.start, window.end) == (day(2025, 5, 1), day(2025, 6, 1))
    window = find_time_window("the trip in May 2023", NOW)
    assert window is not None and (window.start, window.end) == (day(2023, 5, 1), day(2023, 6, 1))
    window = find_time_window("5月份的会议", NOW)
    assert window is not None and (window.start, window.end) == (day(2025, 5, 1), day(2025, 6, 1))


@pytest.mark.parametrize("text", ["May I ask a question?", "上次你说的方案", "Which city do I live in now?", "你好"])
def test_words_that_are_not_dates(text: str) -> None:
    assert find_time_window(text, NOW) is None


def test_entities_include_known_names_in_any_case() -> None:
    analysis = analyze("what did caroline research?", NOW, known_entities=["Caroline", "Melanie"])
    assert analysis.entities == ["Caroline"]
    assert analysis.time_window is None and analysis.history_cues == []
    zh = analyze("王磊上周说了什么", NOW, known_entities=["王磊"])
    assert "王磊" in zh.entities and zh.time_window is not None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("What did I do on 8 May, 2023?", day(2023, 5, 8), day(2023, 5, 9)),
        ("the party on March 3", day(2026, 3, 3), day(2026, 3, 4)),
        ("during 2024", day(2024, 1, 1), day(2025, 1, 1)),
        ("on 2025-12-24", day(2025, 12, 24), day(2025, 12, 25)),
        ("2024年3月5日的会议", day(2024, 3, 5), day(2024, 3, 6)),
        ("12月的账单", day(2025, 12, 1), day(2026, 1, 1)),
    ],
)
def test_absolute_dates(text: str, start: datetime, end: datetime) -> None:
    window = find_time_window(text, NOW)
    assert window is not None and (window.start, window.end) == (start, end)


@pytest.mark.parametrize("text", [
    "Where did I live in January?", "What have I told you about my sister?", "Where have I lived?",
    "How long have my parents been staying with me?", "What has Melanie painted?", "Has he been to Paris?",
    "我去过哪些国家？", "我吃过什么？", "我上周吃了什么？", "我以前住在哪", "上次我们聊到哪了？",
])
def test_a_question_about_the_past(text: str) -> None:
    assert speaks_of_the_past(text)


@pytest.mark.parametrize("text", [
    # "have" as the verb (possession, obligation), not the perfect's auxiliary
    "What car do I have?", "How many children do I have?", "When do I have to hand in my thesis?",
    "Do you have any tips?", "I have a headache, what can I take?", "I've got some free time tonight.",
    # 过 of a word (过敏), 了 closing its clause: a state as it now is
    "我对什么过敏？", "我家小孩几岁了？", "我感冒了，能吃什么药？", "Where do I live now?",
])
def test_a_question_about_the_present(text: str) -> None:
    """Each of these was read as past (any "have", any 了 or 过), so a recall-time update never applied
    to it and the old value stood beside the new one ("What car do I have?" after a new car)."""
    assert not speaks_of_the_past(text)
