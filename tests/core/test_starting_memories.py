"""Starting memories (issue 32): a template a new user's root gets on first use, once, marked as not the
user's; the user's own word replaces it (recall and consolidation) and it never counts as their evidence.
On SQLite and on PostgreSQL; the exactly-once rule with two engines on one PostgreSQL."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight, InvalidInputError, Memory, StartingMemories, Status
from hindsight_core.embeddings.e5 import E5Embedder

UNITS = "The user prefers metric units."
TEMPLATE = [UNITS, {"content": "The user likes vegetarian food.", "kind": "preference", "importance": 4}]
QUESTION = "what units do I use?"
OWN = "I prefer imperial units, miles and pounds."


def _starting(hs: Hindsight, namespace: str) -> list[Memory]:
    return [m for m in hs.find(namespace) if m.starting]


def _texts(hs: Hindsight, query: str, namespace: str) -> list[str]:
    return [h.memory.content for h in hs.recall(query, namespace, track=False).hits]


def test_a_new_user_recalls_the_template_marked_as_starting(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    assert hs.recall(QUESTION, "user:ana").hits == []  # no template: a new user has nothing
    hs.set_starting_memories(TEMPLATE)
    hits = hs.recall(QUESTION, "user:bo").hits
    assert [h.memory.content for h in hits][:1] == [UNITS]
    history = hs.history(hits[0].memory.id, namespace="user:bo")
    assert history.memory.starting and history.memory.metadata["starting"] == "template"
    assert history.memory.source_ids == [] and history.memory.role is None
    assert [(m.content, m.kind.value, m.importance) for m in _starting(hs, "user:bo")] == [
        (UNITS, "fact", 3), ("The user likes vegetarian food.", "preference", 4)]
    assert hs.find("user:ana") == []  # decided before the template was set: an empty recall writes nothing


def test_applied_once_per_root_child_first_and_after_a_restart(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    hs.set_starting_memories(TEMPLATE)
    hs.record("note in the store", "user:cy/store:memories")  # first use below the root
    assert len(_starting(hs, "user:cy")) == 2 and _starting(hs, "user:cy/store:memories") == []
    hs.record("I am back", "user:cy")
    assert hs.apply_starting_memories("user:cy") == []
    hs.close()
    again = open_engine()
    again.set_starting_memories(TEMPLATE)
    again.record("and again", "user:cy")
    assert len(_starting(again, "user:cy")) == 2
    # a user with history of their own is no new user: they never get the template
    again.set_starting_memories(None)
    again.record("I have been here a while", "user:dee")
    again.set_starting_memories(TEMPLATE)
    again.record("still here", "user:dee")
    assert _starting(again, "user:dee") == []
    # forgetting a user entirely makes them new again
    again.forget_namespace("user:cy")
    assert len(again.apply_starting_memories("user:cy")) == 2


def test_the_users_own_statement_outranks_then_supersedes_the_starting_memory(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    hs.set_starting_memories(TEMPLATE)
    hs.record("hello", "user:eve", session_id="s1")
    template = next(m for m in _starting(hs, "user:eve") if m.content == UNITS)
    clock.advance(hours=1)
    own = hs.record(OWN, "user:eve", session_id="s1")
    result = hs.recall(QUESTION, "user:eve", track=False)
    assert [h.memory.id for h in result.hits][:1] == [own.id]
    assert template.id not in [h.memory.id for h in result.hits]
    assert [(c.superseded.id, c.successor.id) for c in result.conflicts] == [(template.id, own.id)]

    report = hs.consolidate("user:eve")
    assert template.id in report.superseded_ids
    history = hs.history(template.id, namespace="user:eve")
    assert history.memory.status == Status.SUPERSEDED
    successor = history.superseded_by[0].memory
    assert not successor.starting and successor.source_ids == [own.id]
    shown = _texts(hs, QUESTION, "user:eve")
    assert UNITS not in shown and successor.content in shown
    # the other starting memory, on another attribute, stays
    assert hs.get(next(m.id for m in _starting(hs, "user:eve") if m.id != template.id)).status == Status.ACTIVE


def test_facts_about_other_things_leave_every_starting_memory_in_place(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    """Consolidation measures a starting memory against the user's turns a fact was distilled from, not
    against the fact: "The user is a backend engineer" and "The user is a beginner." share their framing,
    and on the behaviour set's 47 histories that put 27 of 376 starting memories out of place (a job, a
    city, an allergy or a budget each replaced "is a beginner" or "writes in Chinese"). What the user
    says about a starting memory's attribute still replaces it. Recall measures the user's turns too."""
    hs = open_engine()
    hs.set_starting_memories([UNITS, "The user writes in Chinese.", "The user is a beginner.", "用户是初学者。"])
    for text in ("I'm a backend engineer at a bank.", "I live in Manchester.", "I'm allergic to celery.",
                 "My budget is 25,000 dollars.", "我叫林峰，是个飞行员。"):
        hs.record(text, "user:ian", session_id="s1")
        clock.advance(minutes=1)
    report = hs.consolidate("user:ian")
    assert report.superseded_ids == []
    assert all(m.status == Status.ACTIVE for m in _starting(hs, "user:ian"))
    # nor does recall hand a starting memory's place to a distilled fact about something else
    assert hs.recall("Am I a beginner?", "user:ian", track=False).conflicts == []
    hs.record(OWN, "user:ian", session_id="s2")
    replaced = hs.consolidate("user:ian").superseded_ids
    assert [hs.get(mid).content for mid in replaced] == [UNITS]


def test_a_remark_beside_a_template_item_does_not_replace_it(
    open_engine: Callable[[], Hindsight], clock: Any
) -> None:
    """The user's turn replaces a starting memory when the pair anchors as a query's best candidate
    must: ``floor_anchor_base`` above the best that the template's items reach by chance
    (``floor.anchor_threshold``). The fitted bar it replaced (2.7) let "It makes dentist visits fun."
    (2.79) replace "The user prefers metric units." of an eight-item template, and "充电比想象中方便。"
    replace "用户是初学者。" (the behaviour set with ``benchmarks/starting_template.jsonl``)."""
    hs = open_engine()
    hs.set_starting_memories(["The user prefers short answers.", "The user writes in Chinese.", UNITS,
                              TEMPLATE[1], "The user is a beginner.", "The user wants code examples in Python.",
                              "用户喜欢简短的回答。", "用户是初学者。"])
    for role, text in [("user", "I'm allergic to latex, so no latex gloves or balloons anywhere near me."),
                       ("assistant", "Understood, no latex."), ("user", "It makes dentist visits fun."),
                       ("assistant", "Most dentists have nitrile gloves now, luckily.")]:
        hs.record(text, "user:nina", session_id="s1", role=role)
        clock.advance(minutes=1)
    for role, text in [("user", "我把旧车卖了，换了辆特斯拉Model 3。"), ("assistant", "恭喜换电车！"),
                       ("user", "充电比想象中方便。")]:
        hs.record(text, "user:nina", session_id="s2", role=role)
        clock.advance(minutes=1)
    for question in ("What materials do I react to?", "我现在开什么车？"):
        assert hs.recall(question, "user:nina", track=False).conflicts == [], question
    hs.consolidate("user:nina")
    assert all(m.status == Status.ACTIVE for m in _starting(hs, "user:nina"))
    hs.record(OWN, "user:nina", session_id="s3")
    replaced = hs.consolidate("user:nina").superseded_ids
    assert [hs.get(mid).content for mid in replaced] == [UNITS]


def test_a_starting_memory_shapes_a_request_but_answers_no_question_about_the_user(
    open_engine: Callable[[], Hindsight]
) -> None:
    """A question about the asker is offered the one standing fact of theirs closest to it (profile.py);
    a starting memory is no fact of theirs, and offered by kind it answered every such question (an
    eight-memory template: 282 of 282 unanswerable questions on the behaviour set were given one). A
    request is still offered it, as the template is there to shape a new user's first requests."""
    hs = open_engine()
    hs.set_starting_memories(TEMPLATE)
    for role, text in [("user", "Hi there!"), ("assistant", "Hello! How can I help?"),
                       ("user", "Can you help me plan a weekend in Porto?"),
                       ("assistant", "Sure: Ribeira, the Livraria Lello and a port cellar tour."),
                       ("user", "I'd rather avoid crowds."),
                       ("assistant", "Then go early in the morning and visit the Serralves park.")]:
        hs.record(text, "user:flo", session_id="s1", role=role)
    for question in ("What's my blood type?", "Who is my dentist?"):
        assert not any(h.memory.starting for h in hs.recall(question, "user:flo", track=False).hits), question
    offered = _texts(hs, "Suggest a dinner recipe for tonight.", "user:flo")
    assert "The user likes vegetarian food." in offered


def test_a_starting_memory_is_never_the_users_evidence(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    # the template holds exactly what consolidation distils from the user's sentence (no hand-written text)
    hs.record(OWN, "probe:x", session_id="p")
    hs.consolidate("probe:x")
    distilled = [m.content for m in hs.find("probe:x", layer="semantic")]
    assert distilled
    hs.set_starting_memories(StartingMemories.of(distilled, prefix="user:"))
    assert _starting(hs, "probe:x") == []  # prefix: only user roots get it

    hs.record("hi", "user:fay", session_id="s0")
    template = _starting(hs, "user:fay")
    before = {m.id: m for m in template}
    # recall shows it but does not reinforce it
    assert hs.recall(QUESTION, "user:fay").hits
    hs.flush_recall_log()
    for m in template:
        now = hs.get(m.id)
        assert now is not None and (now.activation, now.access_count) == (before[m.id].activation, 0)
    # the user says the same: a memory of their own replaces the template's, which gains no source
    episode = hs.record(OWN, "user:fay", session_id="s1")
    report = hs.consolidate("user:fay")
    assert report.merged == 0 and report.created == len(distilled)
    for m in hs.find("user:fay", layer="semantic"):
        if m.starting:
            assert m.status == Status.SUPERSEDED and m.source_ids == [] and "mentions" not in m.metadata
        else:
            assert m.source_ids == [episode.id] and not set(m.source_ids) & set(before)


def test_bad_templates_raise_and_change_nothing(open_engine: Callable[[], Hindsight], tmp_path: Path) -> None:
    hs = open_engine()
    hs.set_starting_memories(TEMPLATE)
    bad_file = tmp_path / "bad.jsonl"
    bad_file.write_text(json.dumps(UNITS) + "\nnot json\n", encoding="utf-8")
    for bad in ([{"content": "  "}], [{"content": "x", "kind": "event"}], [{"content": "x", "colour": 1}], [3],
                bad_file, tmp_path / "missing.jsonl", 42, StartingMemories(), [""] * 2,
                StartingMemories(memories=({"content": "x"},), namespace="template:t")):  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            hs.set_starting_memories(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            hs.apply_starting_memories("user:gil", bad)  # type: ignore[arg-type]
    assert [m.content for m in hs.starting_memories.memories] == [UNITS, "The user likes vegetarian food."]
    assert hs.find("user:gil") == []


def test_bad_template_refuses_the_engine(tmp_path: Path, clock: Any, embedder: E5Embedder) -> None:
    with pytest.raises(InvalidInputError, match="kind"):
        Hindsight(tmp_path / "d", clock=clock, embedder=embedder, starting_memories=[{"content": "x", "kind": "turn"}])
    assert not (tmp_path / "d").exists()


def test_a_jsonl_file_and_a_template_namespace(open_engine: Callable[[], Hindsight], tmp_path: Path) -> None:
    hs = open_engine()
    path = tmp_path / "start.jsonl"
    path.write_text(json.dumps(UNITS) + "\n\n" + json.dumps({"content": "The user is a beginner.",
                                                              "slot": "user:level", "value": "beginner"}) + "\n")
    hs.set_starting_memories(path)
    assert [(m.content, m.metadata.get("slot")) for m in hs.apply_starting_memories("user:hal")] == [
        (UNITS, None), ("The user is a beginner.", "user:level")]

    hs.set_starting_memories(None)
    hs.record("The user writes in British English.", "template:new", layer="semantic", kind="fact")
    hs.set_starting_memories(StartingMemories.from_namespace("template:new"))
    hs.record("The user wants short answers.", "template:new", layer="semantic", kind="preference")
    applied = hs.apply_starting_memories("user:ivy/notes")
    assert [(m.namespace, m.content, m.metadata["starting"]) for m in applied] == [
        ("user:ivy", "The user writes in British English.", "template:new"),
        ("user:ivy", "The user wants short answers.", "template:new")]
    assert not any(m.starting for m in hs.find("template:new"))  # the template is not its own user
    assert _texts(hs, "do I want short answers?", "user:ivy")[:1] == ["The user wants short answers."]


def test_two_engines_on_one_postgres_apply_once(
    postgres_url: str, tmp_path: Path, clock: Any, embedder: E5Embedder
) -> None:
    engines = [Hindsight(tmp_path / f"e{i}", database_url=postgres_url, clock=clock, embedder=embedder,
                         background_consolidation=False, starting_memories=TEMPLATE) for i in range(2)]
    try:
        for round_ in range(3):
            root = f"user:race{round_}"
            barrier = threading.Barrier(2)
            written: list[int] = []

            def first_use(hs: Hindsight, root: str = root, barrier: threading.Barrier = barrier,
                          written: list[int] = written) -> None:
                barrier.wait()
                written.append(len(hs.apply_starting_memories(root)))
                hs.record("first words", root)

            threads = [threading.Thread(target=first_use, args=(hs,)) for hs in engines]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(written) == [0, 2]
            for hs in engines:
                assert len(_starting(hs, root)) == 2
    finally:
        for hs in engines:
            hs.close()


async def test_async_twins(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    await hs.aset_starting_memories(TEMPLATE)
    assert len(await hs.aapply_starting_memories("user:jo")) == 2
    assert await hs.aapply_starting_memories("user:jo") == []
