"""Issue 12, one hit per fact: repeats, echoes and a fact's source episodes take one slot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hindsight_core import Hindsight
from hindsight_core.recall.collapse import brings_no_figure, shares_more_than_apart
from tests.conftest import FixedClock
from tests.recall.conftest import FILLER as FOUR_FILLERS
from tests.recall.conftest import record_session

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
FILLER = [
    ("user", "Can you explain how compound interest works?"),
    ("assistant", "Interest is added to the principal, so later interest is earned on earlier interest."),
    ("user", "What's a good way to learn touch typing?"),
]


def _record(hs: Hindsight, ns: str, turns: list[tuple[str, str]]) -> None:
    record_session(hs, ns, "s1", T0, turns)


def test_the_same_sentence_three_times_is_one_hit(engine: Hindsight) -> None:
    same = "The team offsite is in Porto on May 12."
    _record(engine, "u:dup", [("user", same), ("user", same), ("user", same),
                              ("user", "The offsite budget is 200 euros per person."),
                              ("user", "The offsite agenda starts with a hike at 9am."), *FILLER])
    res = engine.recall("What do I need to know about the team offsite?", "u:dup", k=3, now=T0 + timedelta(days=2))
    prompt = res.to_prompt()
    assert prompt.count("Porto") == 1
    porto = next(h for h in res.hits if "Porto" in h.memory.content)
    assert len(porto.sources) == 2 and all(s.content == same for s in porto.sources)


def test_the_slots_freed_by_a_repeat_go_by_evidence(engine: Hindsight, clock: FixedClock) -> None:
    """In a namespace this small, the offsite turns lift the average the query's evidence is measured
    against, so the hike turn scores below it; it must still outrank the typing question, which was
    said later (the more recent, so ahead of it if evidence below the average counted as none)."""
    same = "The team offsite is in Porto on May 12."
    turns = [same, same, same, "The offsite budget is 200 euros per person.",
             "The offsite agenda starts with a hike at 9am."]
    clock.current = T0
    for role, text in [*(("user", t) for t in turns), *FOUR_FILLERS]:  # turn by turn, as in a chat
        engine.record(text, "u:dup-slots", session_id="s1", role=role, occurred_at=clock.advance(minutes=1))
    res = engine.recall("What do I need to know about the team offsite?", "u:dup-slots", k=3, session_id="s2",
                        now=clock.advance(days=2))
    assert [h.memory.content for h in res.hits] == [same, *turns[3:]]


def test_the_agents_echo_collapses_into_the_users_statement(engine: Hindsight) -> None:
    _record(engine, "u:echo", [("user", "Heads up: I'm allergic to peanuts, quite severely."),
                               ("assistant", "Got it, I'll remember that you're allergic to peanuts."), *FILLER])
    res = engine.recall("Am I allergic to anything?", "u:echo", k=5, now=T0 + timedelta(days=2))
    peanut = [h for h in res.hits if "peanuts" in h.memory.content]
    assert len(peanut) == 1 and len(peanut[0].sources) == 1
    assert peanut[0].memory.role == "user"  # the user's words stand for the agent's restatement


def test_the_agents_chinese_echo_collapses(engine: Hindsight) -> None:
    _record(engine, "u:echo-zh", [("user", "吃饭的话我喜欢能看江景的餐厅。"), ("assistant", "明白，江景餐厅。"),
                                  ("user", "复利是怎么计算的？"),
                                  ("assistant", "利息会计入本金，之后的利息也按新本金计算。")])
    res = engine.recall("推荐个吃晚饭的餐厅", "u:echo-zh", k=5, now=T0 + timedelta(days=2))
    view = [h for h in res.hits if "江景" in h.memory.content]
    assert len(view) == 1 and view[0].memory.content == "吃饭的话我喜欢能看江景的餐厅。"


def test_an_echo_closer_to_the_question_brings_the_statement(engine: Hindsight) -> None:
    """"这次出去玩能花多少？" stands close to the agent's "八千块，够玩得挺好。" (z 2.8) and far from the person's
    "这回去厦门，总共准备了八千块。" (0.4): the echo alone cleared the floor, and the agent's paraphrase was
    shown where the person's statement belongs. The statement is shown, at the echo's place, with the
    echo folded into it."""
    _record(engine, "u:echo-only", [("user", "这回去厦门，总共准备了八千块。"), ("assistant", "八千块，够玩得挺好。"),
                                    ("user", "住鼓浪屿还是市区？"), ("assistant", "市区交通方便些。")])
    res = engine.recall("这次出去玩能花多少？", "u:echo-only", k=5, now=T0 + timedelta(days=2))
    budget = [h for h in res.hits if "八千" in h.memory.content]
    assert [(h.memory.content, [m.content for m in h.sources]) for h in budget] == [
        ("这回去厦门，总共准备了八千块。", ["八千块，够玩得挺好。"])]
    assert res.hits[0] is budget[0]


def test_an_agents_reply_with_a_figure_of_its_own_is_not_an_echo(engine: Hindsight) -> None:
    """The agent's reply that states the deal it agreed to is close to the turn it answers, but it is not
    a restatement: folded into the person's turn, the figure the question asks for was not injected."""
    _record(engine, "u:lease", [("user", "Let's lease the EV6 rather than buy it."),
                                ("assistant", "Leasing the EV6 it is: 429 a month for 36 months."), *FILLER])
    res = engine.recall("What monthly payment did we agree on for the car?", "u:lease", k=5,
                        now=T0 + timedelta(days=2))
    assert "429 a month" in res.to_prompt()
    booked = "Booked the hotel in Lisbon for your anniversary, room 512, 180 euros a night."
    _record(engine, "u:hotel", [("user", "Book the hotel in Lisbon for our anniversary."), ("assistant", booked),
                                *FILLER])
    res = engine.recall("Which room number is our Lisbon hotel?", "u:hotel", k=5, now=T0 + timedelta(days=2))
    assert "room 512" in res.to_prompt()


def test_a_confirmation_with_numbers_written_out_is_not_an_echo(engine: Hindsight) -> None:
    """"Booked … at half past seven, four people" confirms the request and adds its time and size, in words
    rather than digits: folded into the request as its echo, the time the question asks for was gone."""
    confirmed = [("Book the riverside restaurant for Saturday night.",
                  "Booked the riverside restaurant for Saturday at half past seven, four people, window table.",
                  "What time is dinner on Saturday?", "half past seven"),
                 ("帮我订周六晚上的江景餐厅。", "订好了，江景餐厅，周六晚上七点半，四位，靠窗。",
                  "周六晚上几点吃饭？", "七点半")]
    for n, (request, booked, asked, part) in enumerate(confirmed):
        _record(engine, f"u:booked{n}", [("user", request), ("assistant", booked), *FILLER])
        res = engine.recall(asked, f"u:booked{n}", k=5, now=T0 + timedelta(days=2))
        assert part in res.to_prompt(), asked


def test_the_answer_to_a_question_is_shown_not_folded_into_the_question(engine: Hindsight) -> None:
    """An answer that restates its question stands close to it (e5 put these pairs above the bar): as the
    agent's echo, or as a near-duplicate sharing the question's words, it was folded into the question,
    and the prompt showed the question without its answer."""
    asked = [("What's a good whisky for a beginner?", "A good whisky for a beginner is a gentle Speyside.",
              "Which whisky did you suggest for a beginner?", "Speyside"),
             ("How often should I water my cactus?", "Water your cactus about every two weeks.",
              "How often did you say to water the cactus?", "every two weeks"),
             ("我的猫每天应该吃多少猫粮？", "你的猫每天应该吃大约六十克猫粮。", "猫每天吃多少猫粮？", "六十克")]
    for n, (question, answer, again, part) in enumerate(asked):
        _record(engine, f"u:asked{n}", [("user", question), ("assistant", answer), *FILLER])
        res = engine.recall(again, f"u:asked{n}", k=5, now=T0 + timedelta(days=2))
        assert part in res.to_prompt(), again


def test_an_echo_brings_no_figure_the_turn_lacks() -> None:
    said = frozenset({"wed", "budget", "25", "000", "dollar"})
    assert brings_no_figure(frozenset({"25", "000", "dollar", "note"}), said)
    assert brings_no_figure(frozenset({"understood", "latex"}), frozenset({"allergic", "latex"}))
    assert not brings_no_figure(frozenset({"leas", "ev6", "36", "month", "429"}), frozenset({"leas", "ev6", "buy"}))
    # written out: English cardinals (stemmed, as the keyword index keeps them) and Chinese numerals
    assert not brings_no_figure(frozenset({"book", "seven", "four", "peopl"}), frozenset({"book", "restaur"}))
    assert not brings_no_figure(frozenset({"twenti", "minut"}), frozenset({"late"}))
    assert not brings_no_figure(frozenset({"订好", "七点", "四位"}), frozenset({"订", "餐厅"}))
    assert not brings_no_figure(frozenset({"年缴", "八千"}), frozenset({"保险"}))
    assert brings_no_figure(frozenset({"明白", "八千"}), frozenset({"准备", "八千"}))  # the same figure
    # a pronoun, a place and a bit are no figures
    assert brings_no_figure(frozenset({"got", "blue", "one"}), frozenset({"want", "blue", "dress"}))
    assert brings_no_figure(frozenset({"明白", "四川", "一点"}), frozenset({"不吃", "辣"}))


def test_a_persons_reply_is_not_an_echo(engine: Hindsight) -> None:
    """Two people talking: a close reply is the friend's own testimony (here, their own allergy)."""
    _record(engine, "u:friends", [("Anna", "I'm allergic to peanuts, quite severely."),
                                  ("Ben", "Same here, I've been allergic to peanuts since I was a kid."), *FILLER])
    res = engine.recall("Who is allergic to peanuts?", "u:friends", k=5, now=T0 + timedelta(days=2))
    assert {h.memory.role for h in res.hits if "peanuts" in h.memory.content} == {"Anna", "Ben"}


def test_different_values_stay_separate(engine: Hindsight) -> None:
    _record(engine, "u:two", [("user", "I'm allergic to peanuts."), *FILLER,
                              ("user", "I'm also allergic to shellfish.")])
    res = engine.recall("Do I have any food allergies?", "u:two", k=5, now=T0 + timedelta(days=2))
    prompt = res.to_prompt()
    assert "peanuts" in prompt and "shellfish" in prompt


def test_skipping_pairs_below_the_bar_changes_no_decision(engine: Hindsight, monkeypatch) -> None:
    """Collapse compares by z-score only the pairs whose cosine (one product over the hits) can reach
    the lower bar; comparing every pair must give the same hits and the same sources."""
    from hindsight_core.recall import collapse

    ns = "u:prune"
    same = "The team offsite is in Porto on May 12."
    _record(engine, ns, [("user", same), ("user", "The team offsite is in Porto on the 12th of May."),
                         ("user", "Heads up: I'm allergic to peanuts, quite severely."),
                         ("assistant", "Got it, I'll remember that you're allergic to peanuts."),
                         ("user", "I'm allergic to shellfish too."), ("user", same), *FILLER])
    queries = ["What do I need to know about the team offsite?", "Am I allergic to anything?",
               "What should I remember about food and travel?"]

    def hits() -> list[tuple[str, list[str]]]:
        out = []
        for query in queries:
            res = engine.recall(query, ns, k=8, now=T0 + timedelta(days=2), track=False)
            out += [(h.memory.id, [s.id for s in h.sources]) for h in res.hits]
        return out

    pruned = hits()
    assert any(sources for _, sources in pruned)  # something did collapse
    monkeypatch.setattr(collapse, "ROUNDING", float("inf"))  # every pair compared
    assert hits() == pruned


def test_near_duplicates_weigh_more_in_common_than_apart() -> None:
    """The term test of a near-duplicate (and of a repeat that is no update): the rare words two
    memories share weigh at least as much as those only one of them has, whatever their number."""
    idf = {"rome": 4.0, "budget": 2.0, "euros": 1.0, "lisbon": 4.0, "trip": 1.0}.__getitem__
    assert shares_more_than_apart(frozenset({"rome", "budget"}), frozenset({"rome", "budget", "euros"}), idf)
    assert shares_more_than_apart(frozenset({"rome", "euros"}), frozenset({"rome", "trip"}), idf)  # 4 against 2
    assert not shares_more_than_apart(frozenset({"rome", "budget"}), frozenset({"lisbon", "budget"}), idf)
    assert not shares_more_than_apart(frozenset(), frozenset(), idf)
