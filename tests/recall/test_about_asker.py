"""A question about the asker (``SentenceKinds.about_asker``) is answered from their memory even when
the embedder puts the words far apart: "What's my line of work?" gets "I'm a plumber in Cardiff", which
e5 scores below the anchor bar a question of general knowledge must clear. General and how-to questions
phrased with "I" or "my" are not about the asker and still get nothing.

The questions below are not among the classifier's training examples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from hindsight_core import Hindsight
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.recall import sentence_kinds

ABOUT = ["What's my line of work?", "Where do I live now?", "What is my son called?", "Do I have any allergies?",
         "我在哪个城市工作？", "我先生是做什么的？", "我家有几口人？", "Which company employs me?"]
GENERAL = ["How far is Jupiter from the Sun?", "How do I write a while loop in Go?", "Who wrote Hamlet?",
           "How do I clean my keyboard?", "长城有多长？", "我的手机怎么截屏？", "What's 30 percent of 90?",
           "Why do cats purr?"]


def test_questions_about_the_asker_by_meaning_outside_the_examples(embedder: E5Embedder) -> None:
    kinds = sentence_kinds.for_embedder(embedder)
    assert not set(ABOUT + GENERAL) & set(sentence_kinds.ABOUT_ASKER + sentence_kinds.NOT_ABOUT_ASKER)
    about = np.array([kinds.about_asker(embedder.embed_query(q)) for q in ABOUT])
    general = np.array([kinds.about_asker(embedder.embed_query(q)) for q in GENERAL])
    assert (about > 0).all(), dict(zip(ABOUT, np.round(about, 2), strict=True))
    assert (general < 0).all(), dict(zip(GENERAL, np.round(general, 2), strict=True))


#: Questions about the asker's own plans that name no "my": "the builders", "the move", "出差".
IMPLICIT = ["When do the builders arrive?", "How much can the kitchen cost?", "How long until the move?",
            "科目二什么时候考？", "出差能报多少？", "这周末的聚会在哪儿？"]


def test_a_question_about_the_asker_needs_no_my(embedder: E5Embedder) -> None:
    """The asker's plans are named as they would name them to someone who knows them ("the move"), and
    such a question is as much about them as "When is my move?"; general questions stay general."""
    kinds = sentence_kinds.for_embedder(embedder)
    assert not set(IMPLICIT) & set(sentence_kinds.ABOUT_ASKER + sentence_kinds.NOT_ABOUT_ASKER)
    implicit = np.array([kinds.about_asker(embedder.embed_query(q)) for q in IMPLICIT])
    general = np.array([kinds.about_asker(embedder.embed_query(q)) for q in GENERAL])
    assert (implicit > 0).all(), dict(zip(IMPLICIT, np.round(implicit, 2), strict=True))
    assert (general < 0).all(), dict(zip(GENERAL, np.round(general, 2), strict=True))


def test_a_question_about_the_asker_gets_their_fact_and_a_general_one_nothing(engine: Hindsight) -> None:
    ns = "user:wes"
    for role, text in [("user", "I'm Wes, I'm a plumber in Cardiff."),
                       ("assistant", "Hi Wes! Busy time of year with frozen pipes."),
                       ("user", "Married to Gwyneth, we've got a springer spaniel called Taffy."),
                       ("assistant", "Springers are bundles of energy."),
                       ("user", "I don't drink alcohol, by the way, never have."),
                       ("assistant", "Noted, I'll skip the pub recommendations.")]:
        engine.record(text, ns, session_id="s1", role=role)
    assert "plumber" in engine.recall("What's my line of work?", ns, track=False).to_prompt()
    for general in GENERAL[:3]:
        assert engine.recall(general, ns, track=False).hits == [], general


def test_a_question_about_the_asker_is_offered_their_closest_standing_fact(engine: Hindsight) -> None:
    """e5 scores "我是做哪一行的？" barely above unrelated sentences from the statement that answers it, so
    the floor alone refuses it however it is relieved; a question about the asker is offered their
    closest standing fact (one: a question asks for one thing), as a request is offered its own."""
    ns = "user:zhou"
    for role, text in [("user", "我姓周，在绍兴开了一家茶馆。"), ("assistant", "周老板好！"),
                       ("user", "这周客人特别多，累坏了。"), ("assistant", "生意兴隆是好事，注意休息。"),
                       ("user", "周末打算带女儿去兰亭转转。"), ("assistant", "兰亭春天很美。")]:
        engine.record(text, ns, session_id="s1", role=role)
    result = engine.recall("我是干哪一行的？", ns, track=False)
    assert "茶馆" in result.to_prompt()
    assert len(result.hits) <= 2, result.to_prompt()  # the offer, and what the floor keeps on its own
    for general in ("长城有多长？", "How far is Jupiter from the Sun?"):
        assert engine.recall(general, ns, track=False).hits == [], general


def test_a_question_that_its_evidence_answers_gets_no_offer(engine: Hindsight) -> None:
    """The offer is a fallback: "What did I tell you yesterday?" is about the asker, and what was said
    yesterday answers it; the closest standing fact, said another day, is not offered beside it."""
    ns = "user:ines"
    engine.record("I'm Ines, I teach chemistry at a secondary school.", ns, session_id="s1", role="user",
                  occurred_at=datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    engine.record("I need to buy a birthday present for my nephew.", ns, session_id="s2", role="user",
                  occurred_at=datetime(2026, 3, 9, 18, 0, tzinfo=UTC))
    result = engine.recall("What did I tell you yesterday?", ns, now=datetime(2026, 3, 10, 9, 0, tzinfo=UTC),
                           track=False)
    assert [h.memory.content for h in result.hits] == ["I need to buy a birthday present for my nephew."]


def test_the_persons_own_questions_do_not_answer_a_question_about_them(engine: Hindsight) -> None:
    """Forty homework questions and one statement of the person's job: "What's the past tense of teach?"
    clears the floor for "What's my job?" (the same "What's ...?" form) where "I'm a lawyer" does not. A
    question the person asked states nothing about them, so it does not count as an answer: the offer of
    their closest standing fact takes the place of such questions."""
    ns = "user:priya"
    verbs = ["swim", "run", "begin", "drink", "ring", "sing", "sink", "spin", "bring", "think", "teach",
             "catch", "fight", "seek", "fly", "draw", "grow", "throw", "blow", "know"]
    homework = [f"What's the past tense of {v}?" for v in verbs] + [f"Can you use '{v}' in a sentence?"
                                                                    for v in verbs]
    start = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
    for n, text in enumerate(homework[:20]):
        engine.record(text, ns, session_id=f"h{n // 10}", role="user", occurred_at=start + timedelta(minutes=n))
    engine.record("I'm a lawyer, I practise in Leeds.", ns, session_id="s1", role="user",
                  occurred_at=start + timedelta(hours=1))
    for n, text in enumerate(homework[20:]):
        engine.record(text, ns, session_id=f"h{2 + n // 10}", role="user", occurred_at=start + timedelta(days=1 + n))
    now = start + timedelta(days=30)
    result = engine.recall("What's my job?", ns, now=now, track=False)
    assert [h.memory.content for h in result.hits] == ["I'm a lawyer, I practise in Leeds."]
    assert "past tense of teach" in engine.recall("What's the past tense of teach?", ns, now=now,
                                                  track=False).to_prompt()


def test_a_question_about_the_asker_is_offered_the_fact_distilled_before_an_old_episode(engine: Hindsight) -> None:
    """After a move, consolidation distils the new home ("用户现在住在青岛"), which the standing-state
    classifier reads as an event; the old episode that still says the old city besides the job is a
    standing state, and the new one's episode reads as an event too. Offered only states, "我现在常住哪里？"
    got the old city alone; a distilled fact is about the person by construction and is offered too, the
    closest one, so the new city is what is shown and the job is still recalled from the old episode."""
    ns = "user:zhouhua"
    for day, session, turns in [
        (1, "s1", [("user", "我叫周华，在成都当护士，有一个女儿。"), ("assistant", "周护士好！"),
                   ("user", "女儿今年上三年级。"), ("assistant", "正是好玩的年纪。")]),
        (200, "s2", [("user", "我们全家搬到青岛了，海边空气真好。"), ("assistant", "青岛夏天很舒服。"),
                     ("user", "就是冬天风大。")]),
    ]:
        for minute, (role, text) in enumerate(turns):
            engine.record(text, ns, session_id=session, role=role,
                          occurred_at=datetime(2026, 1, 1, 20, minute, tzinfo=UTC) + timedelta(days=day))
    engine.consolidate(ns)
    now = datetime(2026, 7, 25, 9, 0, tzinfo=UTC)
    for question in ("我现在常住哪里？", "我定居的城市是哪里？"):
        home = engine.recall(question, ns, now=now, track=False).to_prompt()
        assert "青岛" in home and "成都" not in home, (question, home)
    assert "护士" in engine.recall("我是做什么工作的？", ns, now=now, track=False).to_prompt()
