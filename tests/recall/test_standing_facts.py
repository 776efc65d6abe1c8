"""Standing facts by meaning (profile.py, sentence_kinds.py): a request is offered the person's stated
states closest to it, with no list of domains; a question of fact gets none; an offer is not a use.

The sentences below are not among the classifiers' training examples, and most topics are not either:
they check that the kinds generalise, not that the examples were learned."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.recall import sentence_kinds
from hindsight_core.recall.profile import CONTENT_FREE, STATE, memory_kinds
from hindsight_core.types import Layer, Memory

from ..conftest import FixedClock

HELD_OUT_REQUESTS = [
    "Suggest a dessert I could bring to the party",
    "Plan a three-day hike for me in the Alps",
    "推荐几款适合夏天穿的凉鞋",
    "帮我安排一个周末的健身计划",
    "Any ideas for a gift for my wife?",
]
HELD_OUT_QUESTIONS = [
    "What is the boiling point of ethanol?",
    "When did I start my new job?",
    "珠穆朗玛峰有多高？",
    "我上次去北京是什么时候？",
    "Who painted the Mona Lisa?",
]
HELD_OUT_STATES = ["I'm allergic to kiwi.", "I work night shifts at the depot.", "我有高血压。", "我是左撇子。"]
HELD_OUT_EVENTS = ["I repaired the garden fence this morning.", "My brother visited on Saturday.",
                   "我今天早上去银行办了张卡。", "昨天下午开了个很长的会。"]


def test_the_kinds_generalise_to_sentences_outside_the_examples(embedder: E5Embedder) -> None:
    kinds = sentence_kinds.for_embedder(embedder)
    assert all(kinds.request(embedder.embed_query(q)) > 0 for q in HELD_OUT_REQUESTS)
    assert all(kinds.request(embedder.embed_query(q)) < 0 for q in HELD_OUT_QUESTIONS)
    assert (kinds.standing(embedder.embed_documents(HELD_OUT_STATES)) > 0).all()
    assert (kinds.standing(embedder.embed_documents(HELD_OUT_EVENTS)) < 0).all()
    assert sentence_kinds.for_embedder(embedder) is kinds  # fitted once per embedder


def test_the_shipped_weights_are_todays_fit(embedder: E5Embedder, tmp_path: Path) -> None:
    """The default embedder's weights ship with the package (no examples embedded before the first
    recall); they must score sentences as fitting on today's examples does, and stale ones are not used.
    Scores, not weights, are compared: the embedder's kernels differ by CPU (AVX2, AVX-512), which moves
    its vectors, and so a fit's weights, by about 2% of their norm and its scores by about 0.01."""
    kinds = sentence_kinds.shipped(embedder)
    assert kinds is not None, "examples changed: run python -m hindsight_core.recall.sentence_kinds"
    fresh = sentence_kinds.fit(embedder, sentence_kinds.ALPHA)
    queries = np.stack([embedder.embed_query(t) for t in (*sentence_kinds.REQUESTS, *sentence_kinds.NOT_REQUESTS,
                                                           *HELD_OUT_REQUESTS, *HELD_OUT_QUESTIONS)])
    shipped_requests = np.array([kinds.request(q) for q in queries])
    assert np.abs(shipped_requests - np.array([fresh.request(q) for q in queries])).max() < 0.05
    shipped_asker = np.array([kinds.about_asker(q) for q in queries])
    assert np.abs(shipped_asker - np.array([fresh.about_asker(q) for q in queries])).max() < 0.05
    assert kinds.request_margin == pytest.approx(fresh.request_margin, abs=0.05)
    assert kinds.about_asker_margin == pytest.approx(fresh.about_asker_margin, abs=0.05)
    assert kinds.standing_margin == pytest.approx(fresh.standing_margin, abs=0.05)
    assert kinds.content_free_margin == pytest.approx(fresh.content_free_margin, abs=0.05)
    documents = embedder.embed_documents([*sentence_kinds.STANDING, *sentence_kinds.NOT_STANDING,
                                          *sentence_kinds.CHANGES, *sentence_kinds.NOT_CHANGES,
                                          *sentence_kinds.CONTENT_FREE, *sentence_kinds.SHORT_CONTENT,
                                          *HELD_OUT_STATES, *HELD_OUT_EVENTS])
    for kind in ("standing", "change", "content_free"):
        assert np.abs(getattr(kinds, kind)(documents) - getattr(fresh, kind)(documents)).max() < 0.05
    stale = json.loads(sentence_kinds.SHIPPED.read_text(encoding="utf-8")) | {"digest": "0" * 40}
    path = tmp_path / "sentence_kinds.json"
    path.write_text(json.dumps(stale), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sentence_kinds, "SHIPPED", path)
        assert sentence_kinds.shipped(embedder) is None


def test_a_standing_fact_is_a_persons_own_state() -> None:
    """Grammar, role and layer, not topic: the agent's restatement and a third person's state are not
    the user's standing facts; what the user says of their family is; a distilled fact is; a procedure
    is not; a question in the first person is not; a negative score never is."""
    at = datetime(2026, 4, 1, tzinfo=UTC)

    def memory(content: str, role: str | None = "user", layer: Layer = Layer.EPISODIC) -> Memory:
        return Memory(id=content, namespace="n", content=content, role=role, layer=layer, occurred_at=at,
                      created_at=at, updated_at=at)

    memories = [
        memory("I'm allergic to kiwi."),
        memory("Noted: you're allergic to kiwi, I'll remember.", role="assistant"),
        memory("My sister is allergic to kiwi."),
        memory("Her sister is allergic to kiwi."),
        memory("User is allergic to kiwi.", role=None, layer=Layer.SEMANTIC),
        memory("Check kiwi in every recipe.", role=None, layer=Layer.PROCEDURAL),
        memory("我对猕猴桃过敏。"),
        memory("I'm allergic to kiwi, really."),
        memory("When do I use whom instead of who?"),
        memory("我是不是对猕猴桃过敏？"),
        memory("最近对猕猴桃过敏了。"),  # Chinese drops the subject: the speaker's own, when the classifier is sure
        memory("她对猕猴桃过敏。"),
        memory("就是猕猴桃太酸了。"),  # the subject dropped, and the classifier unsure (the topic, not the speaker)
        memory("I'm not sure I like kiwi."),  # the first person needs no more than a positive score
    ]
    scores = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -0.1, 1.0, 1.0, 1.0, 1.0, 0.2, 0.2])
    assert memory_kinds(memories, scores, -np.ones(14), standing_margin=0.3) == [
        (STATE,), (), (STATE,), (), (STATE,), (), (STATE,), (), (), (), (STATE,), (), (), (STATE,)
    ]  # a question states nothing
    # a content-free turn is that and nothing else; a distilled fact never is one
    free = np.array([1.0, -1.0, -1.0, -1.0, 1.0, *-np.ones(9)])
    assert memory_kinds(memories, scores, free, standing_margin=0.3)[:5] == [
        (CONTENT_FREE,), (), (STATE,), (), (STATE,)]


@pytest.fixture
def offering_engine(engine: Hindsight, clock: FixedClock) -> Hindsight:
    turns = [
        ("user", "I'm allergic to kiwi, it makes my throat swell."),
        ("user", "Can you explain how compound interest works?"),
        ("assistant", "Interest is added to the principal, so later interest is earned on interest."),
        ("user", "I repaired the garden fence this morning."),
        ("user", "What's a good way to learn touch typing?"),
        ("assistant", "Practice daily for fifteen minutes with a typing tutor."),
    ]
    for role, text in turns:
        engine.record(text, "user:k", session_id="s1", role=role)
        clock.advance(minutes=1)
    clock.advance(days=8)
    return engine


def test_a_request_is_offered_the_state_it_should_respect(offering_engine: Hindsight) -> None:
    res = offering_engine.recall("Suggest a fruit salad for the weekend", "user:k", session_id="s2", k=5)
    assert "kiwi" in res.to_prompt()
    assert any("standing fact" in h.reason for h in res.hits if "kiwi" in h.memory.content)
    assert "fence" not in res.to_prompt()  # an event is not a standing fact
    res = offering_engine.recall("帮我做一份周末的水果沙拉", "user:k", session_id="s2", k=5)
    assert "kiwi" in res.to_prompt()  # across languages: the kind is by meaning


def test_a_question_of_fact_is_offered_nothing(offering_engine: Hindsight) -> None:
    res = offering_engine.recall("What is the boiling point of ethanol?", "user:k", session_id="s2", k=5)
    assert res.hits == []


def test_an_offer_is_not_reinforced(offering_engine: Hindsight, clock: FixedClock) -> None:
    kiwi = next(m for m in offering_engine.find("user:k") if "kiwi" in m.content)
    for day in range(3):
        clock.advance(days=1 + day)
        res = offering_engine.recall("Suggest a fruit salad for the weekend", "user:k", session_id=f"r{day}", k=5)
        assert "kiwi" in res.to_prompt()
    offering_engine.flush_recall_log()
    after = offering_engine.get(kiwi.id)
    assert after is not None and after.access_count == kiwi.access_count
    # asked about, it is used, and reinforced like any hit
    clock.advance(hours=1)
    assert "kiwi" in offering_engine.recall("Which fruit am I allergic to?", "user:k", k=3).to_prompt()
    offering_engine.flush_recall_log()
    used = offering_engine.get(kiwi.id)
    assert used is not None and used.access_count == kiwi.access_count + 1


def test_an_offer_survives_a_long_history_of_other_talk(engine: Hindsight, clock: FixedClock) -> None:
    """The offer is a candidate by its kind: 150 turns of homework questions, each closer to "推荐几道家常菜"
    than "I'm pescatarian" is, filled the fused list the floor looks at, and the offer was cut unseen."""
    start = clock()
    events: list[dict[str, object]] = [
        {"content": "By the way, I'm pescatarian: fish is fine, but no other meat.", "role": "user",
         "session_id": "s1", "occurred_at": start}]
    for i in range(75):
        events.append({"content": f"{i + 3}斤是多少公斤？", "role": "user", "session_id": "s1",
                       "occurred_at": start + timedelta(minutes=2 * i + 1)})
        events.append({"content": f"{i + 3}斤是{(i + 3) / 2}公斤。", "role": "assistant", "session_id": "s1",
                       "occurred_at": start + timedelta(minutes=2 * i + 2)})
    engine.record_many(events, "user:long")
    clock.advance(days=3)
    res = engine.recall("推荐几道家常菜", "user:long", session_id="s2", k=5)
    assert "pescatarian" in res.to_prompt()


def _among_homework(engine: Hindsight, clock: FixedClock, ns: str, said: list[tuple[str, str]]) -> None:
    """``said`` in a session of its own, between two sessions of homework questions and their answers."""
    pairs = [(f"What's the past tense of {v}?", f"The past tense of {v} is {p}.")
             for v, p in [("swim", "swam"), ("write", "wrote"), ("speak", "spoke"), ("break", "broke"),
                          ("drive", "drove"), ("ride", "rode"), ("sing", "sang"), ("give", "gave")]]
    pairs += [(f"How many kilometres is {m} miles?", f"{m} miles is about {m * 1.609:.1f} km.")
              for m in (4, 9, 14, 22, 35, 48, 63, 77)]
    start = clock()

    def session(session_id: str, turns: list[tuple[str, str]], day: int) -> None:
        engine.record_many([{"content": text, "role": role, "session_id": session_id,
                             "occurred_at": start + timedelta(days=day, minutes=i)}
                            for i, (role, text) in enumerate(turns)], ns)

    session("h1", [(role, text) for q, a in pairs for role, text in (("user", q), ("assistant", a))], 0)
    session("s1", said, 2)
    session("h2", [(role, text) for q, a in pairs[::-1] for role, text in (("user", q), ("assistant", a))], 4)
    clock.advance(days=6)


def test_a_standing_fact_said_after_the_news_of_the_day_is_one(engine: Hindsight, clock: FixedClock) -> None:
    """"Just got off a twelve-hour shift; I'm a paramedic in Leeds.": the event opens the sentence, the
    standing fact ends it. Classed as an event, it was never offered, and "What's my job?" got nothing
    among homework questions that stand closer to it than the statement does."""
    kinds = sentence_kinds.for_embedder(engine.embedder)
    said = "Just got off a twelve-hour shift; I'm a paramedic in Leeds."
    assert said not in sentence_kinds.STANDING
    assert kinds.standing(engine.embedder.embed_documents([said]))[0] > 0
    _among_homework(engine, clock, "user:jo", [("user", said), ("assistant", "Long shift, rest well.")])
    for question in ("What's my job?", "What do I do for work?"):
        assert [h.memory.content for h in engine.recall(question, "user:jo", track=False).hits] == [said], question


def test_a_remedy_for_a_symptom_is_a_request_the_allergy_bears_on(engine: Hindsight, clock: FixedClock) -> None:
    """"牙疼得厉害，能吃点什么药？" asks for something to be chosen for the asker, as "推荐几道家常菜"
    does, and what they can take depends on what they are allergic to: the allergy is offered. Read as a
    question of fact, it got nothing (Chinese) or homework questions only (English)."""
    kinds = sentence_kinds.for_embedder(engine.embedder)
    asked = ["牙疼得厉害，能吃点什么药？", "Sore throat again, what can I take?"]
    assert not set(asked) & set(sentence_kinds.REQUESTS)
    assert all(kinds.is_request(engine.embedder.embed_query(q)) for q in asked)
    _among_homework(engine, clock, "user:lin", [("user", "我对阿莫西林过敏，吃了会起疹子。"),
                                                ("assistant", "好的，阿莫西林过敏，记下了。"),
                                                ("user", "最近在学游泳。"), ("assistant", "游泳对身体很好。")])
    for question in asked:
        assert "阿莫西林过敏" in engine.recall(question, "user:lin", track=False).to_prompt(), question


def test_a_chinese_statement_without_its_subject_is_the_speakers_own(engine: Hindsight, clock: FixedClock) -> None:
    """"最近膝盖受伤了，医生说三个月不能跑步。" names no one, as Chinese often does: it is the speaker's knee.
    Read as nobody's state (no "我"), it was never offered, and a request for a morning exercise plan got
    only the running habit it rules out."""
    for role, text in [("user", "我每天早上七点跑步。"), ("assistant", "好习惯！")]:
        engine.record(text, "user:zhao", session_id="s1", role=role)
        clock.advance(minutes=1)
    clock.advance(days=7)
    for role, text in [("user", "最近膝盖受伤了，医生说三个月不能跑步。"), ("assistant", "保重，好好休息。")]:
        engine.record(text, "user:zhao", session_id="s2", role=role)
        clock.advance(minutes=1)
    clock.advance(days=1)
    for request in ("帮我安排一下明天早上的运动计划", "推荐个周末的户外活动"):
        assert "膝盖受伤" in engine.recall(request, "user:zhao", track=False).to_prompt(), request
