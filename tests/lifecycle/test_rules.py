"""The rule extractor: one atomic, third-person memory per statement, in Chinese and English."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight_core.lifecycle.extractors import Extractor, RuleExtractor
from hindsight_core.lifecycle.schema import ExtractionContext
from hindsight_core.types import Memory

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _episode(text: str, role: str = "user", i: int = 0) -> Memory:
    return Memory(
        id=f"e{i}",
        namespace="user:t",
        content=text,
        role=role,
        occurred_at=NOW,
        created_at=NOW,
        updated_at=NOW,
    )


def _extract(*texts: str, role: str = "user") -> list[tuple[str, str]]:
    result = RuleExtractor().extract([_episode(t, role, i) for i, t in enumerate(texts)], ExtractionContext("user:t"))
    return [(m.kind, m.content) for m in result.memories]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "你好，我叫王磊，先说一下我对花生过敏，很严重的那种。",
            [("fact", "用户名叫王磊"), ("fact", "用户对花生过敏")],
        ),
        ("我住在杭州。", [("fact", "用户住在杭州")]),
        ("我们这个项目的预算上限是3万元。", [("fact", "用户的预算上限是3万元")]),
        ("我不喜欢香菜。", [("preference", "用户不喜欢香菜")]),
        ("颜色上我偏好暖色调。", [("preference", "用户偏好暖色调")]),
        ("我最近在学游泳。", [("state", "用户最近在学游泳")]),
        ("我下个月要去成都出差。", [("event", "用户下个月要去成都出差")]),
        ("请记住：我的生日是5月3日", [("fact", "用户的生日是5月3日")]),
        (
            "Hi, my name is Rajesh, but everyone calls me Raj.",
            [("fact", "The user's name is Rajesh"), ("fact", "The user goes by Raj")],
        ),
        ("Just so you know, I'm allergic to shellfish.", [("fact", "The user is allergic to shellfish")]),
        (
            "Big news: we just moved to Shanghai last weekend.",
            [("fact", "The user lives in Shanghai now (moved there recently)")],
        ),
        ("I prefer window seats.", [("preference", "The user prefers window seats")]),
        ("Remember that my wife is vegetarian.", [("fact", "The user's wife is vegetarian")]),
        ("Our budget is $5,000 for the trip.", [("fact", "The user's budget is $5,000")]),
        (
            "I have a dentist appointment next Tuesday.",
            [("event", "The user has a dentist appointment next Tuesday")],
        ),
    ],
)
def test_patterns_yield_atomic_third_person_memories(text: str, expected: list[tuple[str, str]]) -> None:
    assert _extract(text) == expected


def test_questions_and_small_talk_yield_nothing() -> None:
    assert _extract("你喜欢什么电影？", "Do you remember what I asked you to call me?", "好的", "ok thanks") == []


def test_assistant_turns_only_corroborate_and_cite_their_episode() -> None:
    episodes = [
        _episode("我们这个项目的预算上限是3万元。", "user", 0),
        _episode("明白，预算上限3万元。", "assistant", 1),
    ]
    result = RuleExtractor().extract(episodes, ExtractionContext("user:t"))
    assert len(result.memories) == 1
    fact = result.memories[0]
    assert fact.source_ids == ["e0", "e1"] and not fact.corroborates
    alone = RuleExtractor().extract([_episode("好的王磊，我记住了你对花生过敏。", "assistant")], ExtractionContext("u"))
    assert [m.corroborates for m in alone.memories] == [True]


def test_named_speakers_are_the_subject() -> None:
    result = RuleExtractor().extract([_episode("I live in Boston now.", role="Caroline")], ExtractionContext("u"))
    assert [m.content for m in result.memories] == ["Caroline lives in Boston"]
    assert result.memories[0].slot == "caroline:home"


def test_rule_extractor_satisfies_the_protocol() -> None:
    assert isinstance(RuleExtractor(), Extractor)
