"""Shared layers (issue 32): a namespace's semantic and procedural memories are recalled beside another
namespace's own by explicit grant only, show where they came from, yield to the grantee's own word, take
no log or reinforcement from the grantee, stop at once when the grant is revoked, and travel with an
export of either side (renamed with it); a grant with write access lets the grantee's consolidation
promote the facts the extractor marks general. On SQLite and on PostgreSQL."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from hindsight_core import Grant, Hindsight, InvalidInputError, Layer
from hindsight_core.lifecycle.extractors import LLMExtractor

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


# -- grants travel with export and import (portability.py) --------------------------------------------

SUPPORT = "agent:support"
RAIL = "kb:rail"


def _pairs(grants: list[Grant]) -> list[tuple[str, str, float]]:
    return [(g.namespace, g.grantee, g.granted_at.timestamp()) for g in grants]


def _granted_both_ways(hs: Hindsight, clock: Any) -> None:
    """SHARED is read by AGENT and SUPPORT and reads RAIL itself; RAIL -> SUPPORT names neither SHARED nor
    AGENT. Each grant at its own time, so a time not carried over shows."""
    _shared_facts(hs)
    hs.record("Night trains leave Vienna for Venice at 21:30.", RAIL, layer="semantic", kind="fact")
    _agent_history(hs)
    for shared, to in [(SHARED, AGENT), (SHARED, SUPPORT), (RAIL, SHARED), (RAIL, SUPPORT)]:
        clock.advance(hours=1)
        hs.grant(shared, to=to, write=to == SUPPORT)  # a write grant travels as one


def test_export_and_import_carry_the_grants_on_either_side(
    open_engine: Callable[[], Hindsight], open_elsewhere: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    _granted_both_ways(hs, clock)
    shared_export = list(hs.export_namespace(SHARED))
    agent_export = list(hs.export_namespace(AGENT))
    assert shared_export[0]["version"] == 2
    assert [(r["namespace"], r["grantee"]) for r in shared_export if r["type"] == "grant"] == [
        (RAIL, SHARED), (SHARED, AGENT), (SHARED, SUPPORT)]  # of SHARED and to it, not RAIL -> SUPPORT
    assert [(r["namespace"], r["grantee"]) for r in agent_export if r["type"] == "grant"] == [(SHARED, AGENT)]
    assert all(isinstance(r["granted_at"], float) for r in shared_export if r["type"] == "grant")
    expected = [g for g in hs.grants() if SHARED in (g.namespace, g.grantee)]
    assert len(expected) == 3 and [g.write for g in expected] == [False, False, True]

    other = open_elsewhere()
    report = other.import_namespace(shared_export)
    assert (report.grants, report.skipped_grants) == (3, 0)
    assert other.grants() == expected  # the same pairs at the same times
    report = other.import_namespace(agent_export)
    assert (report.grants, report.skipped_grants) == (0, 1)  # SHARED -> AGENT came with SHARED's export
    result = other.recall(QUESTION, AGENT, track=False)
    assert f'fact, shared from {SHARED}] "{VISA}"' in result.to_prompt()
    # importing again adds no grant and keeps the first time
    for records in (shared_export, agent_export):
        again = other.import_namespace(records)
        assert (again.memories, again.grants) == (0, 0) and again.skipped_grants == len(
            [r for r in records if r["type"] == "grant"])
    assert other.grants() == expected


def test_an_import_under_another_name_renames_that_side_of_its_grants(
    open_engine: Callable[[], Hindsight], open_elsewhere: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    _granted_both_ways(hs, clock)
    records = list(hs.export_namespace(SHARED))
    at = {(g.namespace, g.grantee): g.granted_at.timestamp() for g in hs.grants()}
    other = open_elsewhere()
    # renamed into the grantee's subtree, SHARED -> AGENT would be a grant to its own parent: refused whole
    for inside in (f"{AGENT}/kb", AGENT):
        with pytest.raises(InvalidInputError, match="one subtree"):
            other.import_namespace(records, namespace=inside)
        assert not other.holds_namespace(inside) and other.grants() == []
    renamed = "kb:travel-2026"
    report = other.import_namespace(records, namespace=renamed)
    assert (report.namespace, report.grants) == (renamed, 3)
    assert _pairs(other.grants()) == [
        (RAIL, renamed, at[(RAIL, SHARED)]),
        (renamed, AGENT, at[(SHARED, AGENT)]),
        (renamed, SUPPORT, at[(SHARED, SUPPORT)]),
    ]
    _agent_history(other)
    result = other.recall(QUESTION, AGENT, track=False)
    assert f'fact, shared from {renamed}] "{VISA}"' in result.to_prompt()
    assert other.import_namespace(records, namespace=renamed).grants == 0
    assert len(other.grants()) == 3


def _with_grant(records: list[dict[str, Any]], **changes: Any) -> list[dict[str, Any]]:
    """The export with its first grant record changed (a key set to ``...`` is dropped)."""
    out = copy.deepcopy(records)
    grant = next(r for r in out if r["type"] == "grant")
    for key, value in changes.items():
        if value is ...:
            del grant[key]
        else:
            grant[key] = value
    return out


def test_a_bad_grant_record_refuses_the_whole_import(
    open_engine: Callable[[], Hindsight], open_elsewhere: Callable[[], Hindsight], clock: Any
) -> None:
    hs = open_engine()
    _granted_both_ways(hs, clock)
    records = list(hs.export_namespace(SHARED))
    first = next(r for r in records if r["type"] == "grant")
    assert (first["namespace"], first["grantee"]) == (RAIL, SHARED)
    v1 = [{**records[0], "version": 1}, *records[1:]]
    bad = {
        "names neither side as the export": _with_grant(records, grantee=SUPPORT),
        "names the export twice": _with_grant(records, namespace=SHARED),
        "a grant to its own subtree": _with_grant(records, namespace=f"{SHARED}/team"),
        "a shared side that is no namespace": _with_grant(records, namespace="bad name"),
        "a grantee that is no string": _with_grant(records, grantee=7),
        "no time": _with_grant(records, granted_at=...),
        "a time that is not a number": _with_grant(records, granted_at="yesterday"),
        "a non-finite time": _with_grant(records, granted_at=float("inf")),
        "a grant in a version 1 export": v1,
    }
    other = open_elsewhere()
    for case, broken in bad.items():
        with pytest.raises(InvalidInputError, match="malformed"):
            other.import_namespace(broken)
        # nothing written: not the memories before the grant record, not the grants
        assert not other.holds_namespace(SHARED) and other.grants() == [], case
    # a version 1 export (no grants) still imports; the untouched export then adds just its grants
    v1_report = other.import_namespace([r for r in v1 if r["type"] != "grant"])
    assert (v1_report.memories, v1_report.grants) == (2, 0) and other.grants() == []
    report = other.import_namespace(records)
    assert (report.memories, report.skipped, report.grants) == (0, 2, 3)


def test_the_grantees_own_memory_on_the_same_topic_comes_first_beside_the_shared_one(
        open_engine: Callable[[], Hindsight]) -> None:
    """Two memories on one topic are not one fact: without a change stated, the shared one stays in the
    prompt, after the grantee's own (hiding it cost a second agent the facts it inherited on LoCoMo)."""
    hs = open_engine()
    shared_fact = "The team lunch on Fridays is at the Italian place on Main Street."
    own = "For team lunches I always vote for the Thai place near the station."
    hs.record(shared_fact, SHARED, layer="semantic", kind="fact")
    hs.record("Expense reports are due on the last working day of the month.", SHARED, layer="semantic",
              kind="fact")
    for fact in ["The VPN must be on to reach the staging cluster.", "Holiday requests go through the HR portal.",
                 "The fire drill is on the first Monday of each quarter.", "The wifi password changes monthly."]:
        hs.record(fact, SHARED, layer="semantic", kind="fact")
    hs.record(own, AGENT, session_id="s1", role="user")
    for text in ["I started on the backend team in March.", "My manager is called Priya.",
                 "I commute by bike most days.", "I'm learning Rust on weekends.", "My desk is next to the window.",
                 "I'm training for a half marathon."]:
        hs.record(text, AGENT, session_id="s2", role="user")
    hs.grant(SHARED, to=AGENT)
    result = hs.recall("Where is the team lunch on Fridays?", AGENT, track=False)
    texts = [h.memory.content for h in result.hits]
    assert own in texts and shared_fact in texts, texts
    assert texts.index(own) < texts.index(shared_fact)
    assert result.conflicts == []


def _support_llm(prompt: str) -> str:
    """A stand-in for the remote model: the agent's answer in a support chat is general knowledge, the
    customer's turn is about them."""
    episodes = re.findall(r"^\[([0-9A-Z]{26})\] \S+ \S+ (\w+): (.*)$", prompt, flags=re.MULTILINE)
    return json.dumps({"memories": [
        {"kind": "fact", "content": text, "importance": 3, "source_ids": [mid], "general": role == "assistant"}
        for mid, role, text in episodes]})


def _support_chat(hs: Hindsight, namespace: str, policy: str, order: str) -> None:
    hs.record(policy, namespace, session_id="c1", role="assistant")
    hs.record(order, namespace, session_id="c1", role="user")


REFUNDS = "Refunds on the web shop are accepted within 30 days of delivery."
BOOTS = "I ordered the hiking boots in size 44 and they're too small."


def test_consolidation_promotes_general_facts_where_a_grant_allows_writing(
        open_engine: Callable[..., Hindsight]) -> None:
    hs = open_engine(extractor=LLMExtractor(_support_llm))
    agent, reader = "agent:support/user:5", "agent:returns/user:9"
    hs.grant(SHARED, to="agent:support", write=True)  # the agent's root may write: its users' chats count
    hs.grant(SHARED, to="agent:returns")  # reading only
    _support_chat(hs, reader, "Returned items are inspected within five working days.", "I sent back a jacket.")
    assert hs.consolidate(reader).promoted == 0  # a read grant promotes nothing
    _support_chat(hs, agent, REFUNDS, BOOTS)
    assert hs.consolidate(agent).promoted == 1
    shared = hs.find(SHARED)
    assert [m.content for m in shared] == [REFUNDS]  # nothing about the person
    promoted = shared[0]
    origin = promoted.metadata["promoted_from"]
    assert origin["namespace"] == agent and promoted.source_ids == [] and promoted.session_id is None
    distilled = hs.get(origin["memory_id"], namespace=agent)
    assert distilled is not None and origin["source_ids"] == distilled.source_ids  # with its sources
    # the shared fact reaches the reading grantee's recall; the same fact is not promoted twice
    assert "shared from kb:travel" in _prompt(hs, reader, query="How long do I have to get a refund?")
    _support_chat(hs, "agent:support/user:6", REFUNDS, "I'd like to return a tent.")
    assert hs.consolidate("agent:support/user:6").promoted == 0 and len(hs.find(SHARED)) == 1
    assert [(g.grantee, g.write) for g in hs.grants(SHARED)] == [("agent:returns", False), ("agent:support", True)]
    hs.grant(SHARED, to="agent:support")  # granted again without write: reading only, from now on
    _support_chat(hs, "agent:support/user:7", "Gift cards never expire.", "I have a gift card from my aunt.")
    assert hs.consolidate("agent:support/user:7").promoted == 0 and len(hs.find(SHARED)) == 1


def test_the_rule_extractor_promotes_nothing(open_engine: Callable[[], Hindsight]) -> None:
    """The offline extractor reads what a person says of themselves: none of it is general knowledge, so
    a write grant changes nothing about what a user's consolidation keeps to itself."""
    hs = open_engine()
    hs.grant(SHARED, to=AGENT, write=True)
    for text in ["I'm allergic to penicillin.", "I live in Lyon and work as a pharmacist.",
                 "Refunds are accepted within 30 days of delivery."]:
        hs.record(text, AGENT, session_id="s1", role="user")
    report = hs.consolidate(AGENT)
    assert report.created >= 1 and report.promoted == 0 and hs.find(SHARED) == []
