"""Content-free turns (sentence_kinds.py, ``SentenceKinds.content_free``): thanks, greetings and
acknowledgements, in any wording and either language, are kept in the transcript and never injected; a
short reply that carries content ("Hill", "绵阳", "H3-215") is recalled like any other turn.

The sentences below are not among the classifier's training examples."""

from __future__ import annotations

import numpy as np

from hindsight_core import Hindsight
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.recall import sentence_kinds
from hindsight_core.recall.keyword import tokenize

from ..conftest import FixedClock

HELD_OUT_FREE = ["Thanks so much, bye for now!", "好嘞，谢谢", "Alright, cool.", "哈哈好的", "See you next week!",
                 "Much obliged.", "Noted.", "thx!", "嗯嗯好", "Great, talk soon."]
HELD_OUT_CONTENT = ["Hill.", "绵阳", "H3-215", "Max 900 dollars.", "I'm allergic to peanuts.", "我住在杭州。",
                    "Budget is 3000 euros for Rome.", "Yes, two cats.", "周五下午三点", "Dr. Patel."]


def _chat(engine: Hindsight, clock: FixedClock, turns: list[tuple[str, str]]) -> None:
    """``(role, text)`` turns said one by one, a minute apart, in session ``s1`` of ``user:t``; then two days
    pass before the questions."""
    for role, text in turns:
        engine.record(text, "user:t", session_id="s1", role=role)
        clock.advance(minutes=1)
    clock.advance(days=2)


def test_content_free_by_meaning_outside_the_examples(embedder: E5Embedder) -> None:
    kinds = sentence_kinds.for_embedder(embedder)
    assert not set(HELD_OUT_FREE + HELD_OUT_CONTENT) & set(sentence_kinds.CONTENT_FREE + sentence_kinds.SHORT_CONTENT)
    free = kinds.content_free(embedder.embed_documents(HELD_OUT_FREE))
    content = kinds.content_free(embedder.embed_documents(HELD_OUT_CONTENT))
    assert (free > 0).all(), dict(zip(HELD_OUT_FREE, np.round(free, 2), strict=True))
    assert (content < 0).all(), dict(zip(HELD_OUT_CONTENT, np.round(content, 2), strict=True))


def test_small_talk_is_kept_but_never_injected(engine: Hindsight, clock: FixedClock) -> None:
    turns = [
        ("user", "Hi!"),
        ("assistant", "Hello! How can I help today?"),
        ("user", "I'm planning a trip to Rome, my budget is 3000 euros."),
        ("assistant", "Lovely, Rome in spring is great."),
        ("assistant", "For the booking: what's your mother's maiden name?"),
        ("user", "Hill"),
        ("user", "Thanks so much, bye for now!"),
        ("assistant", "Anytime, have a good one!"),
        ("user", "好嘞，谢谢"),
    ]
    _chat(engine, clock, turns)
    small_talk = ["Thanks so much", "have a good one", "好嘞", '"Hi!"', "How can I help"]
    budget = engine.recall("What was my budget for Rome?", "user:t", session_id="s2").to_prompt()
    assert "3000 euros" in budget
    assert not [s for s in small_talk if s in budget], budget
    maiden = engine.recall("What's my mother's maiden name?", "user:t", session_id="s2").to_prompt()
    assert '"Hill"' in maiden  # a short reply with content is recalled
    assert not [s for s in small_talk if s in maiden], maiden
    # kept where it was said: the transcript holds every turn
    assert {m.content for m in engine.find("user:t")} >= {text for _, text in turns}


def test_small_talk_as_long_as_the_classifiers_examples_is_not_injected(engine: Hindsight, clock: FixedClock) -> None:
    """Small talk of four keyword terms, the most any example of small talk has: the classifier's verdict
    holds at that length (it was 3, a fitted constant, and let a congratulation of four terms through)."""
    assert sentence_kinds.for_embedder(engine.embedder).content_free_max_terms == max(
        len(set(tokenize(text))) for text in sentence_kinds.CONTENT_FREE) == 4
    turns = [
        ("user", "I just started a new job as a nurse at the children's hospital."),
        ("assistant", "Ooh, new job, congrats!"),
        ("user", "We also moved to Porto in March."),
        ("assistant", "Great city, enjoy the move!"),
    ]
    _chat(engine, clock, turns)
    for question, answer in (("What's my new job?", "nurse"), ("Which city did we move to?", "Porto")):
        prompt = engine.recall(question, "user:t", session_id="s2").to_prompt()
        assert answer in prompt, (question, prompt)
        assert "congrats" not in prompt and "Great city" not in prompt, (question, prompt)


def test_a_bare_answer_of_any_length_is_recalled_with_its_question(engine: Hindsight, clock: FixedClock) -> None:
    """A reply that reads as a bare answer (``SentenceKinds.answer``) is measured with the question it
    answers; it was one of at most two keyword terms, and "The one near the station." (three) was not."""
    kinds = sentence_kinds.for_embedder(engine.embedder)
    bare, statement = "The one near the station.", "I signed up for the climbing gym near the station."
    scores = kinds.answer(engine.embedder.embed_documents([bare, statement]))
    assert scores[0] > 0 > scores[1], scores
    turns = [
        ("user", "I'm trying to get fitter this year."),
        ("assistant", "Nice! Which gym did you end up joining?"),
        ("user", bare),
        ("assistant", "Great, that's a short walk for you."),
        ("user", "Can you explain how compound interest works?"),
        ("assistant", "Interest is added to the principal, so later interest is earned on earlier interest."),
    ]
    _chat(engine, clock, turns)
    prompt = engine.recall("Which gym did I join?", "user:t", session_id="s2").to_prompt()
    assert bare in prompt, prompt
    assert "compound interest" not in prompt, prompt


def test_a_small_talk_message_recalls_nothing(engine: Hindsight, clock: FixedClock) -> None:
    """A chat loop recalls for every message the user sends: "Thanks again" drew two of six memories (the
    agent's "Window seats, noted." among them) through a floor that measures relevance only. Small talk
    as a query, in either language, is given nothing; a short message with content, and a question the
    classifier is not sure of, is recalled as before. "How are you?" and "你好吗？" read as questions about
    the asker, and each was given a memory ("Happy birthday to Mia!")."""
    _chat(engine, clock, [("user", "My daughter Mia just turned 7."), ("assistant", "Happy birthday to Mia!"),
                          ("user", "I prefer window seats when I fly."), ("assistant", "Window seats, noted."),
                          ("user", "我对青霉素过敏。"), ("assistant", "好的，记住了。")])
    for said in ["Thanks again", "ok cool", "lol ok", "好的谢谢", "明白了", "Good morning!", "How are you?",
                 "How have you been?", "你好吗？"]:
        res = engine.recall(said, "user:t", k=5, explain=True)
        assert res.hits == [] and res.to_prompt() == "", said
        assert res.trace is not None and res.trace.small_talk, said
    assert "window seats" in engine.recall("Window seat", "user:t", k=5).to_prompt()
    assert "Mia" in engine.recall("How old is my kid?", "user:t", k=5).to_prompt()
    assert "青霉素" in engine.recall("我能吃阿莫西林吗？", "user:t", k=5).to_prompt()
    assert not engine.recall("Do I work in healthcare?", "user:t", k=5, explain=True).trace.small_talk  # type: ignore[union-attr]
