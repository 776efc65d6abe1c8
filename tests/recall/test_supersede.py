"""Issue 12, recall-time updates (``recall.supersede``, on by default): when recall meets an older and
a newer statement of the same attribute, the newer one is shown and the older reported as superseded —
before any consolidation, without a verb list."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.config import HindsightConfig, RecallConfig
from hindsight_core.text.script import is_cjk
from tests.recall.conftest import FILLER, record_session

JAN = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
MAR = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
APR = datetime(2026, 4, 9, 15, 0, tzinfo=UTC)
FILLER_ZH = [
    ("user", "复利是怎么计算的？"),
    ("assistant", "利息会计入本金，之后的利息也按新本金计算。"),
    ("user", "有什么练习打字的好办法？"),
    ("assistant", "每天用打字软件练十五分钟。"),
]


@pytest.fixture
def engine(tmp_path: Path, clock: Any, embedder: Any) -> Iterator[Hindsight]:
    hs = Hindsight(tmp_path / "updates", clock=clock, embedder=embedder, config=HindsightConfig())
    yield hs
    hs.close()


def _two_sessions(hs: Hindsight, ns: str, old: str, new: str, filler: list[tuple[str, str]] = FILLER,
                  new_role: str = "user") -> None:
    record_session(hs, ns, "s1", JAN, [("user", old), *filler])
    record_session(hs, ns, "s2", MAR, [(new_role, new), *filler])


def test_a_move_in_a_later_conversation_replaces_the_old_city(engine: Hindsight) -> None:
    _two_sessions(engine, "u:berlin", "I live in Munich, near the English Garden.", "I moved to Berlin last month.")
    res = engine.recall("Where do I live now?", "u:berlin", k=3, now=APR)
    prompt = res.to_prompt()
    assert "Berlin" in prompt and "Munich" not in prompt
    assert [(c.superseded.content, c.successor.content) for c in res.conflicts] == [
        ("I live in Munich, near the English Garden.", "I moved to Berlin last month.")]


def test_in_a_small_namespace_a_pair_needs_only_what_its_own_chance_reaches(engine: Hindsight) -> None:
    """The bar of a recall-time update is the best that the namespace's n memories reach by chance
    (``floor.chance_best``), not a constant fitted on conversations of hundreds of turns: in this
    seven-memory history the old home and the move stand between the two (the old bar, 2.7, left the
    weekend outing near home offered 长沙)."""
    record_session(engine, "u:hefei", "s1", JAN, [
        ("user", "我住在长沙岳麓区，离橘子洲不远。"), ("assistant", "好的，长沙岳麓区。"),
        ("user", "长沙的夜宵太香了。"), ("assistant", "口味虾和糖油粑粑都很有名。")])
    record_session(engine, "u:hefei", "s2", MAR, [
        ("user", "我上个月搬到合肥了，老婆在这边工作。"), ("assistant", "合肥发展挺快的，生活节奏也舒服。"),
        ("user", "就是吃不到正宗的湘菜了。")])
    res = engine.recall("推荐个我家附近的周末去处", "u:hefei", now=APR)
    assert "合肥" in res.to_prompt() and "岳麓" not in res.to_prompt()
    assert [c.superseded.content for c in res.conflicts] == ["我住在长沙岳麓区，离橘子洲不远。", "好的，长沙岳麓区。"]


def test_facts_written_as_they_stand_are_not_updated_at_recall(engine: Hindsight) -> None:
    """Recall-time updates are for what was said in conversations. Two facts written into a new
    namespace without a session stood above the chance of two memories, and the newer one hid the older
    from the very question it answers; a semantic memory is superseded by consolidation or by its
    writer, not by the next fact written."""
    ns = "kb:shop"
    engine.record("Refunds are accepted within 30 days of delivery, with the receipt.", ns, layer="semantic",
                  kind="fact", occurred_at=JAN)
    engine.record("Orders over 50 euros ship for free within the EU.", ns, layer="semantic", kind="fact",
                  occurred_at=MAR)
    result = engine.recall("Can I still send the shoes back for a refund?", ns, track=False, now=APR)
    assert "30 days" in result.to_prompt() and result.conflicts == []


def test_a_migration_replaces_the_old_database(engine: Hindsight) -> None:
    _two_sessions(engine, "u:db", "Our backend uses MySQL 5.7.", "The team has migrated the backend to PostgreSQL 16.")
    res = engine.recall("Which database does our backend run on?", "u:db", k=3, now=APR)
    prompt = res.to_prompt()
    assert "PostgreSQL 16" in prompt and "MySQL" not in prompt
    assert [c.superseded.content for c in res.conflicts] == ["Our backend uses MySQL 5.7."]


def test_a_raised_budget_replaces_the_old_one_in_chinese(engine: Hindsight) -> None:
    _two_sessions(engine, "u:budget", "这次装修的预算是五万元。", "装修预算提高到八万元了。", FILLER_ZH)
    res = engine.recall("我的装修预算是多少？", "u:budget", k=3, now=APR)
    prompt = res.to_prompt()
    assert "八万" in prompt and "五万" not in prompt
    assert [c.successor.content for c in res.conflicts] == ["装修预算提高到八万元了。"]


def test_a_question_about_the_past_still_gets_the_old_value(engine: Hindsight) -> None:
    _two_sessions(engine, "u:past", "Our backend uses MySQL 5.7.",
                  "The team has migrated the backend to PostgreSQL 16.")
    res = engine.recall("Which database did our backend use before?", "u:past", k=3, now=APR)
    assert "MySQL 5.7" in res.to_prompt()
    assert res.conflicts == []


@pytest.mark.parametrize(("old", "new", "query", "current", "stale"), [
    ("I drive a 2015 Honda Civic.", "Sold the Civic and bought a Tesla Model 3.", "What car do I have?",
     "Tesla", "Honda"),
    ("My thesis is due March 3.", "My advisor gave me an extension on the thesis until April 10.",
     "When do I have to hand in my thesis?", "April 10", "March 3"),
])
def test_a_question_with_have_as_its_verb_gets_the_current_value(
        engine: Hindsight, old: str, new: str, query: str, current: str, stale: str) -> None:
    """"What car do I have?" asks about now: "have" is the verb, not the perfect's auxiliary. Read as a
    question about the past (any "have" was), it got the old car beside the new one."""
    _two_sessions(engine, "u:have", old, new)
    prompt = engine.recall(query, "u:have", k=5, now=APR).to_prompt()
    assert current in prompt and stale not in prompt, prompt


def test_what_a_person_said_after_the_agents_old_value_stays(engine: Hindsight) -> None:
    """The agent's "好的，十五万以内。" is updated by its own later "好的，预算改成十八万了。"; the person's next turn
    ("家用为主，偶尔跑长途。", what the car is for) is no echo of it and stays: it was hidden with the agent's
    turn, and the question it answers got nothing."""
    record_session(engine, "u:car", "s1", JAN, [("user", "想买辆车，预算十五万以内。"),
                                               ("assistant", "好的，十五万以内。"),
                                               ("user", "家用为主，偶尔跑长途。"), *FILLER_ZH])
    record_session(engine, "u:car", "s2", MAR, [("user", "跟老婆商量了，预算加到十八万。"),
                                               ("assistant", "好的，预算改成十八万了。"), *FILLER_ZH])
    res = engine.recall("我买车主要干嘛用？", "u:car", k=5, now=APR)
    assert "家用为主" in res.to_prompt(), res.to_prompt()
    assert all(c.superseded.content != "家用为主，偶尔跑长途。" for c in res.conflicts)


def test_a_question_about_a_change_changes_nothing(engine: Hindsight) -> None:
    """"Can we move the offsite to Lisbon instead?" asks; the change classifier reads it as a change (0.68),
    and it hid "The team offsite is in Porto in May." as though the offsite had moved."""
    _two_sessions(engine, "u:ask", "The team offsite is in Porto in May.", "Can we move the offsite to Lisbon instead?")
    res = engine.recall("Where is the team offsite?", "u:ask", k=5, now=APR)
    assert "Porto in May" in res.to_prompt(), res.to_prompt()
    assert res.conflicts == []


@pytest.mark.parametrize(("old", "asked", "answer", "new", "question", "shown", "hidden"), [
    ("I work as a pharmacist at a hospital.", "What does a UX designer actually do all day?",
     "Mostly research, wireframes and testing with users.",
     "I switched careers, I'm a UX designer at a startup now.", "What do I do for work?", "UX designer at",
     "pharmacist"),
    ("我住在成都高新区。", "杭州的夏天热不热？", "挺热的，经常三十五度以上。", "我们上个月搬到杭州了，孩子在这边上学。",
     "我住在哪个城市？", "杭州了", "成都"),
])
def test_a_question_asked_between_two_values_does_not_stand_between_them(
    engine: Hindsight, old: str, asked: str, answer: str, new: str, question: str, shown: str, hidden: str,
) -> None:
    """People ask about the new value before it is theirs ("What does a UX designer actually do all day?",
    "杭州的夏天热不热？"): the question was the new statement's closest earlier turn, or the old one's closest
    later turn, so the two were not each other's closest and no update was found; the old value stood
    beside the new one, or alone. A question states no value and is passed over."""
    filler = FILLER_ZH if is_cjk(old) else FILLER
    record_session(engine, "u:between", "s1", JAN, [("user", old), *filler])
    record_session(engine, "u:between", "s2", JAN + timedelta(days=30), [("user", asked), ("assistant", answer)])
    congrats = "恭喜！" if is_cjk(new) else "Congrats!"
    record_session(engine, "u:between", "s3", MAR, [("user", new), ("assistant", congrats)])
    prompt = engine.recall(question, "u:between", k=5, now=APR).to_prompt()
    assert shown in prompt and hidden not in prompt, prompt


def test_two_statements_of_one_conversation_add_up(engine: Hindsight) -> None:
    record_session(engine, "u:allergies", "s1", JAN, [("user", "I'm allergic to peanuts."), *FILLER,
                                                ("user", "I'm also allergic to shellfish.")])
    res = engine.recall("Do I have any food allergies?", "u:allergies", k=3, now=APR)
    prompt = res.to_prompt()
    assert "peanuts" in prompt and "shellfish" in prompt
    assert res.conflicts == []


def test_another_speaker_does_not_update_what_the_user_said(engine: Hindsight) -> None:
    _two_sessions(engine, "u:speaker", "Our backend uses MySQL 5.7.",
                  "The team has migrated the backend to PostgreSQL 16.", new_role="assistant")
    res = engine.recall("Which database does our backend run on?", "u:speaker", k=3, now=APR)
    assert "MySQL 5.7" in res.to_prompt()
    assert all(c.superseded.content != "Our backend uses MySQL 5.7." for c in res.conflicts)


def test_the_newest_of_three_values_is_shown(engine: Hindsight) -> None:
    _two_sessions(engine, "u:chain", "我住在上海徐汇区。", "我上个月搬到杭州了。", FILLER_ZH)
    record_session(engine, "u:chain", "s3", APR - timedelta(days=2),
                   [("user", "我又搬家了，现在住在南京。"), *FILLER_ZH])
    res = engine.recall("我现在住在哪个城市？", "u:chain", k=3, now=APR)
    prompt = res.to_prompt()
    assert "南京" in prompt and "上海" not in prompt and "杭州" not in prompt
    # what would have been shown is reported, superseded by the newest value
    assert "我住在上海徐汇区。" in {c.superseded.content for c in res.conflicts}
    assert {c.successor.content for c in res.conflicts} == {"我又搬家了，现在住在南京。"}


@pytest.fixture
def plain_engine(tmp_path: Path, clock: Any, embedder: Any) -> Iterator[Hindsight]:
    hs = Hindsight(tmp_path / "plain", clock=clock, embedder=embedder)
    yield hs
    hs.close()


def test_updates_are_on_by_default_and_can_be_switched_off(plain_engine: Hindsight) -> None:
    _two_sessions(plain_engine, "u:off", "Our backend uses MySQL 5.7.",
                  "The team has migrated the backend to PostgreSQL 16.")
    res = plain_engine.recall("Which database does our backend run on?", "u:off", k=3, now=APR)
    assert "PostgreSQL 16" in res.to_prompt() and "MySQL 5.7" not in res.to_prompt()
    plain_engine.config.recall.supersede = False
    res = plain_engine.recall("Which database does our backend run on?", "u:off", k=3, now=APR)
    prompt = res.to_prompt()
    assert "MySQL 5.7" in prompt and "PostgreSQL 16" in prompt
    assert res.conflicts == []


def test_a_later_statement_that_changes_nothing_is_not_an_update(engine: Hindsight) -> None:
    """"My sister lives in Hamburg" passes every other test for an update of "I live in Munich" (same
    speaker, later conversation, the same attribute, other words); it states no change, so both stay.
    Without the change test it is taken for one."""
    _two_sessions(engine, "u:sister", "I live in Munich, near the English Garden.", "My sister lives in Hamburg.")
    res = engine.recall("Where do I live?", "u:sister", k=3, now=APR)
    assert "Munich" in res.to_prompt() and res.conflicts == []
    engine.config.recall.supersede_needs_change = False
    res = engine.recall("Where do I live?", "u:sister", k=3, now=APR)
    assert "Munich" not in res.to_prompt()
    assert [c.superseded.content for c in res.conflicts] == ["I live in Munich, near the English Garden."]


def test_the_agents_echo_of_the_old_value_goes_with_it(engine: Hindsight) -> None:
    """The agent repeating the old value back ("4,000 euros, noted.") is shown for no question once the
    user changed it: it goes where the statement it echoed goes, and the agent's echo of the new value
    may stay."""
    record_session(engine, "u:echo", "s1", JAN, [("user", "The renovation budget is 4,000 euros."),
                                                  ("assistant", "4,000 euros, noted."), *FILLER])
    record_session(engine, "u:echo", "s2", MAR, [("user", "We had to raise the renovation budget to 6,500 euros."),
                                                  ("assistant", "Got it, 6,500 euros."), *FILLER])
    res = engine.recall("What is my renovation budget?", "u:echo", k=5, now=APR)
    prompt = res.to_prompt()
    assert "6,500" in prompt and "4,000" not in prompt, prompt
    assert {c.superseded.content for c in res.conflicts} >= {"The renovation budget is 4,000 euros."}


def test_a_request_gets_the_current_value_only(engine: Hindsight) -> None:
    """A request is about now as much as a question is: a seat booked after the preference changed."""
    _two_sessions(engine, "u:request", "I only take window seats on trains, I like the view.",
                  "I switched to aisle seats on trains, it's easier with my bad knee.")
    res = engine.recall("Book me a train seat to Lyon for Friday.", "u:request", k=5, now=APR)
    prompt = res.to_prompt()
    assert "aisle" in prompt and "window" not in prompt, prompt


def test_a_change_said_in_the_other_language_replaces_the_old_value(engine: Hindsight) -> None:
    """Cosines across languages run lower: the pair is measured against the background of the other
    one's language, as the floor measures a memory against the query's (``LanguageBaselines``)."""
    _two_sessions(engine, "u:cross", "I drive a Volkswagen Golf, it's twelve years old.",
                  "我把那辆旧车卖了，换了一辆比亚迪。")
    res = engine.recall("What car do I drive?", "u:cross", k=3, now=APR)
    prompt = res.to_prompt()
    assert "比亚迪" in prompt and "Golf" not in prompt, prompt
    assert [c.superseded.content for c in res.conflicts] == ["I drive a Volkswagen Golf, it's twelve years old."]


def test_the_agents_reply_to_the_new_value_is_no_rival(engine: Hindsight) -> None:
    """The old statement's nearest later memory is the agent's "Lisbon it is", not the user's own change:
    only what the same speaker said later can update it, so the reply does not block the update."""
    record_session(engine, "u:offsite", "s1", JAN, [("user", "The team offsite is in Porto in May."),
                                                     ("assistant", "Porto in May, noted."), *FILLER])
    record_session(engine, "u:offsite", "s2", MAR, [
        ("user", "The offsite moved to Lisbon, the Porto hotels were full."),
        ("assistant", "Lisbon it is, understood."), *FILLER])
    res = engine.recall("Where is the team offsite?", "u:offsite", k=5, now=APR)
    prompt = res.to_prompt()
    assert "Lisbon" in prompt and "Porto in May" not in prompt, prompt



@pytest.mark.parametrize(("old", "new", "query", "current", "stale"), [
    ("The product launch is planned for March 3.", "We pushed the launch to March 24, the vendor is late.",
     "When is the product launch?", "March 24", "March 3."),
    ("想换个手机，预算三千以内。", "跟家里商量了，预算放宽到四千五。", "我买手机的预算是多少？", "四千五", "三千"),
])
def test_a_change_said_with_a_reason_replaces_the_old_value(engine: Hindsight, old: str, new: str, query: str,
                                                            current: str, stale: str) -> None:
    """A reason said with the change pulls the whole sentence away from the old statement (the pair's z
    falls under the bar; the change classifier reads the reason): the clause that speaks to the old
    statement is what is measured, when the two are each other's closest."""
    filler = FILLER_ZH if "预算" in old else FILLER
    _two_sessions(engine, "u:reason", old, new, filler)
    res = engine.recall(query, "u:reason", k=5, now=APR)
    prompt = res.to_prompt()
    assert current in prompt and stale not in prompt, prompt
    assert [(c.superseded.content, c.successor.content) for c in res.conflicts] == [(old, new)]


@pytest.mark.parametrize(("old", "new", "changed", "stale", "other", "kept"), [
    ("I live in Leeds, I work as a pharmacist and I have a beagle called Max.",
     "I quit the pharmacy, I'm a software tester now.",
     "What do I do for work?", "pharmacist", "What's my dog's name?", "beagle called Max"),
    ("我住在杭州，在银行上班，平时喜欢爬山。", "我从银行辞职了，现在在一家游戏公司做策划。",
     "我现在做什么工作？", "在银行上班", "我周末喜欢做什么运动？", "爬山"),
])
def test_an_older_memory_that_says_more_keeps_what_did_not_change(
        engine: Hindsight, old: str, new: str, changed: str, stale: str, other: str, kept: str) -> None:
    """Only one of the older memory's clauses changed: a question about it gets the new value alone; a
    question about the rest still gets the older memory, with its update beside it."""
    _two_sessions(engine, "u:partial", old, new, FILLER_ZH if is_cjk(old) else FILLER)
    res = engine.recall(changed, "u:partial", k=5, now=APR)
    assert new in res.to_prompt() and stale not in res.to_prompt()
    assert [c.superseded.content for c in res.conflicts] == [old]
    res = engine.recall(other, "u:partial", k=5, now=APR)
    prompt = res.to_prompt()
    assert kept in prompt and new in prompt
    assert prompt.index(old) < prompt.index(new)
    assert res.conflicts == []


def test_a_configuration_written_for_a_retired_constant_still_means_what_it_said() -> None:
    """``supersede_z``, ``collapse_overlap``, ``content_free_terms``, ``reply_terms`` and ``zh_to_en_z_scale``
    (fitted, now derived or learned) are gone: ``supersede_z=None`` still turns the updates off, a value
    warns that it no longer applies."""
    assert RecallConfig.model_validate({"supersede_z": None}).supersede is False
    with pytest.warns(DeprecationWarning, match="supersede_z is gone"):
        assert RecallConfig(supersede_z=2.7).supersede is True  # type: ignore[call-arg]
    with pytest.warns(DeprecationWarning, match="collapse_overlap is gone"):
        assert RecallConfig.model_validate({"collapse_overlap": 0.6}) == RecallConfig()
    with pytest.warns(DeprecationWarning, match="content_free_terms is gone"):
        assert RecallConfig.model_validate({"content_free_terms": 3}) == RecallConfig()
    with pytest.warns(DeprecationWarning, match="reply_terms is gone"):
        assert RecallConfig.model_validate({"reply_terms": 2}) == RecallConfig()
    with pytest.warns(DeprecationWarning, match="zh_to_en_z_scale is gone"):
        assert RecallConfig.model_validate({"zh_to_en_z_scale": 1.4}) == RecallConfig()


def test_a_history_boost_given_is_the_temporal_weight_it_made() -> None:
    """``history_boost`` multiplied the temporal channel's weight whenever that channel had members: a
    configuration that sets it gets the weight it produced (the old default 0.6, or its own, times it)."""
    with pytest.warns(DeprecationWarning, match="history_boost is gone"):
        assert RecallConfig.model_validate({"history_boost": 2.5}) == RecallConfig()
    with pytest.warns(DeprecationWarning, match="history_boost is gone"):
        assert RecallConfig.model_validate({"history_boost": 1.0}).channel_weights["temporal"] == 0.6
    with pytest.warns(DeprecationWarning, match="history_boost is gone"):
        weights = RecallConfig.model_validate(
            {"history_boost": 2.0, "channel_weights": {"vector": 1.0, "keyword": 1.0, "temporal": 0.5}}
        ).channel_weights
    assert weights == {"vector": 1.0, "keyword": 1.0, "temporal": 1.0}
