"""Standing facts: what a user said once that constrains every later request of its kind.

An allergy matters to "recommend a restaurant" although the two share no words and sit far apart in
embedding space; a name matters to "what should you call me". Similarity alone cannot bridge that, so
each kind of standing fact names the domain of requests it constrains, as a few prototype requests.
When a query falls clearly inside a domain (its cosine to the prototypes stands out against the
background, like the relevance floor), the standing facts of that domain become candidates and count
as evidence. The kinds are few and generic on purpose: this is about constraints, not topics."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class StandingKind:
    name: str
    #: Matches the text of a memory that states such a fact.
    pattern: re.Pattern[str]
    #: Requests the fact constrains, in English and Chinese.
    domain: tuple[str, ...]


_FOOD = (
    "Recommend a restaurant for dinner.",
    "What should I cook tonight?",
    "Order some food for the party.",
    "Suggest a recipe for the weekend.",
    "Where should we eat out with friends?",
    "推荐一家餐厅。",
    "今晚吃什么好？",
    "帮我订个饭店请朋友吃饭。",
    "推荐一道菜的做法。",
    "帮我点个外卖。",
)

STANDING_KINDS: tuple[StandingKind, ...] = (
    StandingKind(
        "diet",
        re.compile(
            r"过敏|忌口|吃素|素食|不吃|不能吃|乳糖不耐|清真|allerg|intoleran|vegetarian|vegan|gluten|"
            r"\bhalal\b|\bkosher\b|(?:can't|cannot|don't|do not|never) eat",
            re.IGNORECASE,
        ),
        _FOOD,
    ),
    StandingKind(
        "name",
        re.compile(r"我叫|我的名字|叫我|称呼我|my name is|call me\b|my name's", re.IGNORECASE),
        (
            "What is my name?",
            "What should you call me?",
            "Do you know who I am?",
            "我叫什么名字？",
            "你该怎么称呼我？",
        ),
    ),
    StandingKind(
        "health",
        re.compile(r"糖尿病|高血压|哮喘|怀孕|心脏病|diabet|pregnan|asthma|blood pressure|heart condition",
                   re.IGNORECASE),
        (
            *_FOOD,
            "Recommend a workout plan for me.",
            "Which medicine can I take for a cold?",
            "推荐一个适合我的运动计划。",
            "感冒了吃什么药好？",
        ),
    ),
)


def standing_kinds(text: str) -> tuple[str, ...]:
    """The kinds of standing fact a memory states (usually none)."""
    return tuple(kind.name for kind in STANDING_KINDS if kind.pattern.search(text))
