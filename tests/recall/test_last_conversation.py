"""Issue 37: "What did we conclude last time?" names no content to match; its answer is the last
conversation, which it names as "last week" names a week."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight_core import Hindsight
from hindsight_core.recall.analysis import analyze
from tests.recall.conftest import record_session

T0 = datetime(2026, 4, 10, 19, 0, tzinfo=UTC)
LEASE = [
    ("user", "Lease or buy the Kia EV6?"),
    ("assistant", "Leasing: 429 dollars a month for 36 months. Buying: about 48,000 dollars."),
    ("user", "Battery tech is moving fast, so let's lease."),
    ("assistant", "Sensible. Lease the EV6 for 36 months at 429 a month."),
]


@pytest.mark.parametrize(("text", "last"), [
    ("What did we conclude in our last chat?", True),
    ("What did we decide last time?", True),
    ("上次我们商量好的是什么？", True),
    ("What did we conclude about the lease?", False),
    ("What did I do last week?", False),
])
def test_the_last_conversation_is_a_unit_of_time(text: str, last: bool) -> None:
    assert analyze(text, T0).last_conversation is last


def _two_sessions(engine: Hindsight, ns: str) -> None:
    record_session(engine, ns, "s0", T0 - timedelta(days=30), [
        ("user", "Can you recommend a podcast about astronomy?"),
        ("assistant", "Try 'Planetary Radio' from The Planetary Society."),
    ])
    record_session(engine, ns, "s1", T0, LEASE)
    record_session(engine, ns, "s2", T0 + timedelta(days=14), [("user", "Hey again"),
                                                               ("assistant", "Hey! How can I help?")])


# the Chinese one clears the floor with the question that opened that conversation, which concluded nothing
@pytest.mark.parametrize("query", ["What did we conclude in our last chat?", "上次聊天我们决定了什么？"])
def test_what_we_concluded_last_time_is_the_last_conversation(engine: Hindsight, query: str) -> None:
    _two_sessions(engine, "u:lease")
    res = engine.recall(query, "u:lease", k=5, session_id="s2", now=T0 + timedelta(days=14, minutes=2))
    prompt = res.to_prompt()
    assert "lease" in prompt and "429" in prompt
    assert "Planetary" not in prompt and "Hey again" not in prompt


def test_only_a_question_about_the_last_conversation_is_given_it(engine: Hindsight) -> None:
    _two_sessions(engine, "u:lease2")
    at = T0 + timedelta(days=14, minutes=2)
    assert engine.recall("What is the capital of Peru?", "u:lease2", k=5, session_id="s2", now=at).to_prompt() == ""
    # one that also names what it asks about gets the last conversation too, when nothing answers it: the
    # agent can tell the person what that conversation was about ("we talked about leasing the EV6")
    last = engine.recall("Last time, which capital city did you say Peru has?", "u:lease2", k=5, session_id="s2",
                         now=at).to_prompt()
    assert "EV6" in last and "Planetary" not in last


@pytest.mark.parametrize("query", ["What did we talk about last time?", "上次我们聊了什么？"])
def test_the_last_conversation_comes_before_an_offer_of_a_standing_fact(engine: Hindsight, query: str) -> None:
    """"What did we talk about last time?" also reads as a question about the asker, which is offered
    their closest standing fact when nothing answers it: the car of three conversations back took the
    place of the last conversation. Its time is named: the last conversation answers it."""
    ns = "u:last-talk"
    record_session(engine, ns, "s0", T0 - timedelta(days=20), [
        ("user", "I live in Lisbon and work as a nurse."), ("assistant", "Nursing in Lisbon must keep you busy.")])
    record_session(engine, ns, "s1", T0 - timedelta(days=10), [
        ("user", "I drive a 2015 Honda Civic, it needs a service soon."), ("assistant", "Good to know.")])
    record_session(engine, ns, "s2", T0, [
        ("user", "My sister Marta is getting married in June."), ("assistant", "Congratulations to her!")])
    prompt = engine.recall(query, ns, k=5, session_id="s3", now=T0 + timedelta(days=5)).to_prompt()
    assert "Marta" in prompt
    assert "Honda" not in prompt and "Lisbon" not in prompt
