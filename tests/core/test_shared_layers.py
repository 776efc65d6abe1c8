"""Shared layers (issue 32): a namespace's semantic and procedural memories are recalled beside another
namespace's own by explicit grant only, show where they came from, yield to the grantee's own word, take
no log or reinforcement from the grantee, and stop at once when the grant is revoked. On SQLite and on
PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hindsight_core import Grant, Hindsight, InvalidInputError, Layer

SHARED = "kb:travel"
AGENT = "agent:planner"
VISA = "Visitors to Japan for up to 90 days need no visa, only a passport valid for the whole stay."
QUESTION = "Do I need a visa for a two-week trip to Japan?"


def _shared_facts(hs: Hindsight) -> str:
    visa = hs.record(VISA, SHARED, layer="semantic", kind="fact")
    hs.record("Trains in Switzerland run every half hour between the main cities.", SHARED,
              layer="semantic", kind="fact")
    return visa.id


def _agent_history(hs: Hindsight, namespace: str = AGENT) -> None:
    for role, text in [("user", "I'm planning a trip to Japan in April with my sister."),
                       ("assistant", "April is cherry blossom season, lovely timing."),
                       ("user", "We want to see Kyoto and Osaka.")]:
        hs.record(text, namespace, session_id="s1", role=role)


def _prompt(hs: Hindsight, namespace: str = AGENT, query: str = QUESTION, **kw: object) -> str:
    return hs.recall(query, namespace, track=False, **kw).to_prompt()  # type: ignore[arg-type]


def test_shared_facts_are_recalled_by_grant_only_and_say_where_they_come_from(
        open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    _shared_facts(hs)
    _agent_history(hs)
    assert "passport" not in _prompt(hs)  # no grant, no read
    grant = hs.grant(SHARED, to=AGENT)
    assert isinstance(grant, Grant) and (grant.namespace, grant.grantee) == (SHARED, AGENT)
    result = hs.recall(QUESTION, AGENT, track=False)
    shared = [h for h in result.hits if h.memory.namespace == SHARED]
    assert [h.memory.content for h in shared] == [VISA]
    assert f'fact, shared from {SHARED}] "{VISA}"' in result.to_prompt()
    assert "Switzerland" not in result.to_prompt()  # the shared layer passes the floor like any other
    # the grantee's subtree reads through its root's grant; a name that merely shares characters does not
    _agent_history(hs, f"{AGENT}/user:7")
    assert "passport" in _prompt(hs, f"{AGENT}/user:7")
    _agent_history(hs, f"{AGENT}s")
    assert "passport" not in _prompt(hs, f"{AGENT}s")
    assert "passport" not in _prompt(hs, shared=False)
    # revoking takes effect on the next recall, also in another engine on the same store
    assert hs.revoke(SHARED, to=AGENT) is True
    assert "passport" not in _prompt(hs)
    assert hs.revoke(SHARED, to=AGENT) is False


def test_only_what_was_learned_is_shared_not_the_conversation(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    hs.record("My passport number is X1234567 and it expires next May.", SHARED, session_id="s9", role="user")
    _agent_history(hs)
    hs.grant(SHARED, to=AGENT)
    prompt = _prompt(hs, query="When does the passport expire?")
    assert "X1234567" not in prompt
    assert "X1234567" in _prompt(hs, SHARED, query="When does the passport expire?")


def test_the_grantees_own_word_outranks_the_shared_fact_on_the_same_thing(
        open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    hs.record("The team standup is at 9:00 every weekday morning.", SHARED, layer="semantic", kind="fact")
    hs.record("The expense limit for a client dinner is 80 euros per person.", SHARED, layer="semantic",
              kind="fact")
    hs.record("Our team standup moved to 10:30 every weekday.", AGENT, session_id="s1", role="user")
    hs.grant(SHARED, to=AGENT)
    result = hs.recall("What time is the team standup?", AGENT, track=False)
    prompt = result.to_prompt()
    assert "10:30" in prompt and "9:00" not in prompt, prompt
    assert [(c.superseded.namespace, c.successor.content) for c in result.conflicts] == [
        (SHARED, "Our team standup moved to 10:30 every weekday.")]
    # a shared fact on another matter still comes through beside the grantee's memory
    assert "80 euros" in _prompt(hs, query="How much can I spend on a client dinner?")


def test_recalling_a_shared_memory_writes_nothing_to_the_shared_namespace(
        open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    visa = _shared_facts(hs)
    _agent_history(hs)
    hs.grant(SHARED, to=AGENT)
    assert "passport" in hs.recall(QUESTION, AGENT).to_prompt()  # tracked: logs and reinforces the agent's
    hs.flush_recall_log()
    memory = hs.get(visa)
    assert memory is not None and memory.access_count == 0
    assert hs.inspection.injections(memory) == []


def test_grants_are_listed_checked_and_forgotten_with_either_side(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    _shared_facts(hs)
    _agent_history(hs)
    _agent_history(hs, "agent:support")
    first = hs.grant(SHARED, to=AGENT)
    assert hs.grant(SHARED, to=AGENT) == first  # granted again: the first grant stands
    hs.grant(SHARED, to="agent:support")
    assert [(g.namespace, g.grantee) for g in hs.grants()] == [(SHARED, AGENT), (SHARED, "agent:support")]
    assert [g.grantee for g in hs.grants(AGENT)] == [AGENT]
    for shared, to in [(AGENT, f"{AGENT}/user:1"), (f"{AGENT}/kb", AGENT), (SHARED, SHARED), ("bad name", AGENT),
                       (SHARED, "")]:
        with pytest.raises(InvalidInputError):
            hs.grant(shared, to=to)
    assert len(hs.grants()) == 2  # a refused grant changes nothing
    hs.forget_namespace(AGENT)  # a forgotten grantee leaves no grant behind
    assert [g.grantee for g in hs.grants()] == ["agent:support"]
    hs.forget_namespace(SHARED)  # nor does a forgotten shared namespace
    assert hs.grants() == []


def test_the_shared_layer_answers_a_procedure(open_engine: Callable[[], Hindsight]) -> None:
    hs = open_engine()
    hs.add_procedure("refund request from a customer",
                     ["check the order date", "refund if within 30 days", "log the refund"], SHARED)
    hs.record("I handle customer emails for the web shop.", AGENT, session_id="s1", role="user")
    hs.grant(SHARED, to=AGENT)
    hits = hs.recall("A customer asks for a refund, what do I do?", AGENT, track=False).hits
    assert any(h.memory.layer == Layer.PROCEDURAL and h.memory.namespace == SHARED for h in hits)
