"""``hindsight tune`` (tuning.py): the floor's bars fitted to a user's labelled questions, measured on
held-out folds, and ``recall(config=...)``, the per-call settings it compares on one engine."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight_core import Hindsight, HindsightConfig, InvalidInputError
from hindsight_core.config import RecallConfig
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.recall.tuning import (
    ANSWERABLE as ANSWERABLE_KIND,
)
from hindsight_core.recall.tuning import (
    GUARDED,
    UNANSWERABLE,
    Example,
    fit,
    passed,
    read_examples,
    report_rows,
    tune,
)

NS = "user:mara"
FACTS = [
    ("job", "I work as a nurse at the children's hospital."),
    ("allergy", "I'm allergic to peanuts."),
    ("violin", "My daughter Lily plays the violin."),
    ("flat", "We live in a flat on the fourth floor in Porto."),
    ("car", "My car is a blue Honda Civic."),
    ("run", "I run five kilometres every Sunday morning."),
    ("brother", "My brother Tom lives in Melbourne."),
    ("japanese", "I'm learning Japanese for a trip next spring."),
    ("cat", "Our cat is called Miso."),
    ("tea", "I don't drink coffee, only green tea."),
    ("birthday", "My birthday is on the ninth of March."),
    ("deposit", "I'm saving for a house deposit of 40,000 euros."),
    ("penicillin", "我对青霉素过敏。"),
    ("bank", "我在一家银行做会计。"),
    ("son", "我儿子今年上小学三年级。"),
    ("metro", "我每天坐地铁二号线上班。"),
    ("hometown", "我老家在四川绵阳。"),
    ("hiking", "我周末喜欢去爬山。"),
    ("band", "I play bass in a jazz band on Fridays."),
    ("salt", "My doctor told me to cut down on salt."),
    ("wife", "My wife Ana is a software engineer."),
    ("balcony", "I grow tomatoes and basil on the balcony."),
]
ANSWERABLE = [
    ("What's my profession?", "job"), ("Do I have any food allergies?", "allergy"),
    ("Which instrument does my daughter play?", "violin"), ("Which floor is our flat on?", "flat"),
    ("What car do I drive?", "car"), ("How often do I go running?", "run"),
    ("Where does my brother live?", "brother"), ("Which language am I studying?", "japanese"),
    ("What's the name of our cat?", "cat"), ("Do I drink coffee?", "tea"),
    ("When is my birthday?", "birthday"), ("How much am I saving for the house?", "deposit"),
    ("我对什么药过敏？", "penicillin"), ("我是做什么工作的？", "bank"), ("我儿子几年级了？", "son"),
    ("我怎么去上班？", "metro"), ("我老家是哪里的？", "hometown"), ("我周末一般干什么？", "hiking"),
    ("What band do I play in?", "band"), ("What did my doctor say about my diet?", "salt"),
    ("What does my wife do?", "wife"), ("What am I growing at home?", "balcony"),
]
OFF_TOPIC = [
    "What is the capital of Peru?", "How many legs does a spider have?", "Who wrote Pride and Prejudice?",
    "What is 17 times 23?", "How do I reverse a list in Python?", "法国的首都是哪里？",
    "水的沸点是多少度？", "What year did the Berlin Wall fall?", "Explain how photosynthesis works.",
    "珠穆朗玛峰有多高？", "What's the speed of light?", "Translate 'good morning' into Spanish.",
]
#: A floor 3.6 below the shipped one stands in for an embedder whose evidence runs high: off-topic
#: questions get memories.
PERMISSIVE = round(RecallConfig().floor_anchor_base - 3.6, 4)


def examples() -> list[Example]:
    return ([Example(q, NS, frozenset([a])) for q, a in ANSWERABLE]
            + [Example(q, NS, frozenset()) for q in OFF_TOPIC])


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, embedder: E5Embedder) -> Iterator[Hindsight]:
    config = HindsightConfig()
    config.recall.floor_anchor_base = PERMISSIVE
    hs = Hindsight(tmp_path_factory.mktemp("tune"), config=config, embedder=embedder, background_consolidation=False)
    hs.record_many([{"content": text, "role": "user", "session_id": "s1", "source_id": sid} for sid, text in FACTS],
                   NS)
    yield hs
    hs.close()


def test_a_permissive_floor_is_tuned_until_off_topic_questions_get_nothing(engine: Hindsight) -> None:
    given_before = [q for q in OFF_TOPIC if engine.recall(q, NS, subtree=True, track=False).hits]
    assert len(given_before) >= 6  # the mis-set bar lets off-topic questions through

    report = tune(engine, examples())

    # measured on the held-out folds: far fewer off-topic questions given memories, answers kept
    assert report.after.quiet >= report.before.quiet + 6
    assert report.after.answered >= report.before.answered - 1
    assert report.improved and report.fitted["floor_anchor_base"] > PERMISSIVE
    # the curve on every question: from the permissive bar, where off-topic questions get memories, to
    # the tuned one, where they do not
    curve = dict(report.curve)
    assert list(curve) == sorted(curve) and len(curve) == 13
    assert curve[PERMISSIVE].quiet <= 4 and curve[report.fitted["floor_anchor_base"]].quiet >= 10
    # what the written configuration does, recalled on the same engine with the fitted settings
    fitted = report.config(engine.config).recall
    given_after = [q for q in OFF_TOPIC if engine.recall(q, NS, subtree=True, track=False, config=fitted).hits]
    assert len(given_after) <= 2
    answered = [q for q, sid in ANSWERABLE
                if sid in {h.memory.source_id for h in engine.recall(q, NS, subtree=True, track=False,
                                                                       config=fitted).hits}]
    assert len(answered) >= len(ANSWERABLE) - 3
    # read-only: no recall logged, nothing reinforced, the engine's own settings untouched
    assert engine.config.recall.floor_anchor_base == PERMISSIVE
    engine.flush_recall_log()
    assert engine.stats(NS).namespaces[NS].recall_hit_rate is None
    assert all(m.access_count == 0 for m in engine.find(NS))


def test_a_call_with_its_own_settings_leaves_the_engine_and_other_calls_alone(engine: Hindsight) -> None:
    off_topic = "What is the capital of Peru?"
    assert engine.recall(off_topic, NS, track=False).hits  # the engine's permissive bar lets it through
    assert engine.recall(off_topic, NS, track=False, config=RecallConfig()).hits == []  # the shipped bar
    assert engine.recall(off_topic, NS, track=False).hits  # the next call has the engine's settings again
    query = "What's the name of our cat?"
    assert len(engine.recall(query, NS, track=False).hits) > 1
    assert len(engine.recall(query, NS, track=False, config=RecallConfig(default_k=1)).hits) == 1
    assert engine.config.recall.floor_anchor_base == PERMISSIVE
    with pytest.raises(InvalidInputError):
        engine.recall(query, NS, config={"floor_anchor_base": 1.0})  # type: ignore[arg-type]


def test_too_few_examples_are_refused_before_anything_is_recalled(engine: Hindsight) -> None:
    few = examples()[:19] + examples()[-10:]  # 19 answerable
    with pytest.raises(InvalidInputError, match="19 answerable and 10 unanswerable"):
        tune(engine, few)
    with pytest.raises(InvalidInputError, match="9 unanswerable"):
        tune(engine, examples()[:-3])


def test_examples_are_read_line_by_line_and_a_bad_line_is_named(tmp_path: Path) -> None:
    lines = ['{"question": "What car do I drive?", "answers": ["car"]}', "",
             '{"question": "Capital of Peru?", "answers": [], "namespace": "user:b", "session_id": "s9",'
             ' "at": "2026-03-01T09:00:00+01:00"}']
    read = read_examples(lines, namespace="user:a")
    assert read == [Example("What car do I drive?", "user:a", frozenset({"car"})),
                    Example("Capital of Peru?", "user:b", frozenset(), "s9",
                            datetime(2026, 3, 1, 8, 0, tzinfo=UTC))]
    for bad, says in [("not json", "line 1: not JSON"), ("[1]", "expected an object"),
                      ('{"question": "", "answers": []}', "question must be"),
                      ('{"question": "q", "answers": "car"}', "answers must be"),
                      ('{"question": "q", "answers": [""]}', "answers must be"),
                      ('{"question": "q", "answers": [], "session_id": 3}', "session_id must be"),
                      ('{"question": "q", "answers": [], "at": "2026-03-01T09:00:00"}', "at must be"),
                      ('{"question": "q", "answers": [], "at": 5}', "at must be")]:
        with pytest.raises(InvalidInputError, match=says):
            read_examples([bad], namespace="user:a")
    with pytest.raises(InvalidInputError, match="line 2: no namespace"):
        read_examples(["", '{"question": "q", "answers": []}'])


def test_forbidden_memories_are_read_and_a_question_with_only_them_is_guarded() -> None:
    read = read_examples(['{"question": "What is our budget?", "answers": ["new"], "forbid": ["old", "echo"]}',
                          '{"question": "Which photographer?", "forbid": ["thanks"]}',
                          '{"question": "Capital of Peru?", "answers": []}'], namespace="user:a")
    assert [(ex.answers, ex.forbid, ex.kind) for ex in read] == [
        (frozenset({"new"}), frozenset({"old", "echo"}), ANSWERABLE_KIND),
        (frozenset(), frozenset({"thanks"}), GUARDED),
        (frozenset(), frozenset(), UNANSWERABLE),
    ]
    for bad, says in [('{"question": "q", "forbid": "old"}', "forbid must be"),
                      ('{"question": "q", "forbid": [""]}', "forbid must be"),
                      ('{"question": "q"}', "answers must be"),
                      ('{"question": "q", "answers": ["a"], "forbid": ["a"]}', "both answers and is forbidden")]:
        with pytest.raises(InvalidInputError, match=says):
            read_examples([bad], namespace="user:a")


def test_a_forbidden_memory_injected_fails_the_question(engine: Hindsight) -> None:
    question = "What's the name of our cat?"
    loose = engine.recall(question, NS, subtree=True, track=False)  # the permissive bar: more than the cat
    strict = engine.recall(question, NS, subtree=True, track=False, config=RecallConfig())
    given = [h.memory.source_id for h in loose.hits]
    assert given[0] == "cat" and "car" in given and [h.memory.source_id for h in strict.hits] == ["cat"]
    answer_only = Example(question, NS, frozenset({"cat"}), forbid=frozenset({"car"}))
    guarded = Example(question, NS, frozenset(), forbid=frozenset({"car"}))
    assert not passed(loose, answer_only) and not passed(loose, guarded)
    assert passed(strict, answer_only) and passed(strict, guarded)
    # without the forbidden memory, the loose answer passes as before; a guarded question wants nothing
    # but the absence of what it forbids
    assert passed(loose, Example(question, NS, frozenset({"cat"}), forbid=frozenset({"birthday"})))
    assert passed(strict, Example(question, NS, frozenset(), forbid=frozenset({"cat"}))) is False


def test_guarded_questions_move_the_fit_towards_the_setting_that_lets_nothing_forbidden_in() -> None:
    # two settings: the first answers every answerable question but lets the old value in beside the new
    # one on 8 of 10 guarded questions; the second answers one fewer and lets nothing forbidden in
    kinds = [ANSWERABLE_KIND] * 10 + [UNANSWERABLE] * 10 + [GUARDED] * 10
    grid = [{"floor_anchor_base": 1.43}, {"floor_anchor_base": 1.93}]
    loose = [True] * 10 + [True] * 10 + [True, False] * 1 + [False] * 8
    tight = [True] * 9 + [False] + [True] * 10 + [True] * 10
    report = fit(kinds, grid, [loose, tight], folds=5)
    assert report.fitted == grid[1] and report.improved
    assert (report.before.clean, report.before.guarded, report.after.clean, report.after.guarded) == (1, 10, 10, 10)
    assert ("guarded questions given nothing forbidden", "1/10", "10/10") in report_rows(report)
    # without the guarded questions the loose setting wins: it answers more
    unguarded = fit(kinds[:20], grid, [loose[:20], tight[:20]], folds=5)
    assert unguarded.fitted == grid[0] and not unguarded.improved
    assert all(row[0] != "guarded questions given nothing forbidden" for row in report_rows(unguarded))
