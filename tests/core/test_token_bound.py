"""The default token counter's cheap upper bound, and packing that tokenizes only when the bound does
not settle whether a hit fits (multilingual-e5's tokenizer costs about 0.3 ms a text)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight_core.recall.budget import pack
from hindsight_core.recall.pipeline import CachedCounter
from hindsight_core.recall.types import RecallHit
from hindsight_core.text.tokens import default_token_counter, truncate_to_tokens
from hindsight_core.types import Layer, Memory

COUNTER = default_token_counter()
#: Everything a memory may hold: any script, emoji, symbols, combining marks, whitespace.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_the_bound_is_never_below_the_count(text: str) -> None:
    assert COUNTER.count(text) <= COUNTER.at_most(text)


def test_the_bound_holds_where_one_character_is_several_tokens() -> None:
    """Characters the vocabulary lacks fall back to their bytes: one Arabic letter is three tokens."""
    for text in ["ب", "|||", ";'|I", "😀🎉👍🏽🇵🇹", "ﷺ", "a\u0301\u200b", "我对花生过敏"]:
        assert COUNTER.count(text) <= COUNTER.at_most(text), text


class Spy:
    """The default counter, recording what it was asked to tokenize."""

    def __init__(self) -> None:
        self.tokenized: list[str] = []

    def count(self, text: str) -> int:
        self.tokenized.append(text)
        return COUNTER.count(text)

    def at_most(self, text: str) -> int:
        return COUNTER.at_most(text)


class ExactOnly:
    def count(self, text: str) -> int:
        return COUNTER.count(text)


def hit(text: str, i: int) -> RecallHit:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    memory = Memory(id=f"m{i}", namespace="u:1", layer=Layer.EPISODIC, content=text or "-", occurred_at=at,
                    created_at=at, updated_at=at)
    return RecallHit(memory=memory, score=1.0 - i / 100, text=f"- {text}")


def test_hits_that_fit_by_their_bounds_are_not_tokenized() -> None:
    spy = Spy()
    hits = [hit(t, i) for i, t in enumerate(["I live in Lisbon.", "I'm allergic to peanuts.", "我对花生过敏"])]
    injected, idle = pack(hits, k=5, budget_tokens=800, counter=spy)
    assert [h.memory.id for h in injected] == ["m0", "m1", "m2"] and idle == []
    assert spy.tokenized == []
    assert truncate_to_tokens("I live in Lisbon.", 160, spy) == "I live in Lisbon." and spy.tokenized == []


def test_a_long_memory_is_still_cut_to_its_tokens() -> None:
    long = "预算上限是三万元，" * 40
    cut = truncate_to_tokens(long, 160, Spy())
    assert cut.endswith("…") and COUNTER.count(cut) <= 160 < COUNTER.count(long)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(TEXT, st.integers(0, 3)), min_size=1, max_size=8), st.integers(1, 6),
       st.integers(20, 400))
def test_packing_with_bounds_chooses_what_exact_counting_chooses(
    texts: list[tuple[str, int]], k: int, budget: int,
) -> None:
    hits = [hit(text * (repeat + 1), i) for i, (text, repeat) in enumerate(texts)]
    bounded = pack(hits, k, budget, CachedCounter(COUNTER))
    exact = pack(hits, k, budget, ExactOnly())
    assert [[h.memory.id for h in part] for part in bounded] == [[h.memory.id for h in part] for part in exact]
