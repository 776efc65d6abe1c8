"""The two frameworks' adapters share one hit-metadata shape, one rule for over-long queries (keep
the tail), one set of tool names and one session log (issue 38, defect 5)."""

from __future__ import annotations

import uuid

import pytest
from llama_index.core.schema import QueryBundle

from hindsight_core import Hindsight
from hindsight_core.integration import MAX_QUERY_CHARS, query_text
from hindsight_langchain import HindsightRetriever as LCRetriever
from hindsight_langchain import memory_tools as lc_tools
from hindsight_llamaindex import HindsightRetriever as LIRetriever
from hindsight_llamaindex import memory_tools as li_tools

FACT = "I am allergic to peanuts"


def _ns() -> str:
    return f"user:{uuid.uuid4().hex[:8]}"


def test_over_long_queries_keep_their_tail_in_both_frameworks(shared_hs: Hindsight) -> None:
    ns = _ns()
    shared_hs.record(FACT, ns)
    shared_hs.record("We talked about hiking in the Alps", ns)
    # the head is about one memory, the tail about the other: which one comes back shows the rule
    query = "Tell me about hiking in the Alps. " * 130 + "What about my peanuts allergy? " * 130
    assert len(query) > MAX_QUERY_CHARS and "hiking" not in query_text(query)
    lc = LCRetriever(namespace=ns, engine=shared_hs, k=1).invoke(query)
    li = LIRetriever(ns, engine=shared_hs, k=1).retrieve(QueryBundle(query))
    assert lc[0].page_content == FACT == li[0].node.get_content()


def test_hit_metadata_has_one_shape(shared_hs: Hindsight) -> None:
    ns = _ns()
    shared_hs.record(FACT, ns, session_id="s1")
    lc = LCRetriever(namespace=ns, engine=shared_hs, k=1).invoke("peanuts allergy")[0].metadata
    li = LIRetriever(ns, engine=shared_hs, k=1).retrieve("peanuts allergy")[0].node.metadata
    assert set(lc) == set(li) and lc["memory_id"] == li["memory_id"]  # scores move: recall reinforces
    assert {k: v for k, v in lc.items() if k not in ("score", "channels", "reason")} == {
        k: v for k, v in li.items() if k not in ("score", "channels", "reason")
    }
    assert {"memory_id", "score", "layer", "kind", "namespace", "occurred_at"} <= set(lc)


def test_tool_names_are_the_same(shared_hs: Hindsight) -> None:
    ns = _ns()
    lc = [t.name for t in lc_tools(ns, engine=shared_hs)]
    li = [t.metadata.name for t in li_tools(ns, engine=shared_hs)]
    assert lc == li == ["recall_memory", "save_memory", "forget_memory"]


def test_one_conversation_id_reads_the_same_in_both_frameworks(shared_hs: Hindsight) -> None:
    """The README invites one conversation id across frameworks: each reads the other's log by role and
    text (LlamaIndex read LangChain's turns as empty user messages; LangChain raised a raw KeyError on
    LlamaIndex's), and a log both wrote to reads whole in either."""
    from langchain_core.messages import AIMessage, HumanMessage
    from llama_index.core.llms import ChatMessage, MessageRole

    from hindsight_langchain import HindsightChatMessageHistory
    from hindsight_llamaindex import HindsightChatStore

    ns = _ns()
    history = HindsightChatMessageHistory(ns, "chat-1", engine=shared_hs)
    store = HindsightChatStore(namespace=ns, engine=shared_hs)
    history.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted, no peanuts.")])
    assert [(m.role, m.content) for m in store.get_messages("chat-1")] == [
        (MessageRole.USER, "I'm allergic to peanuts."), (MessageRole.ASSISTANT, "Noted, no peanuts.")]

    store.add_message("chat-1", ChatMessage(role=MessageRole.USER, content="And to shellfish."))
    history.add_messages([AIMessage("No shellfish either.")])
    assert [(type(m).__name__, m.content) for m in history.messages] == [
        ("HumanMessage", "I'm allergic to peanuts."), ("AIMessage", "Noted, no peanuts."),
        ("HumanMessage", "And to shellfish."), ("AIMessage", "No shellfish either.")]
    assert [m.content for m in store.get_messages("chat-1")] == [
        "I'm allergic to peanuts.", "Noted, no peanuts.", "And to shellfish.", "No shellfish either."]


def test_a_log_entry_in_no_known_shape_is_a_clear_error(shared_hs: Hindsight) -> None:
    from hindsight_core import InvalidInputError
    from hindsight_langchain import HindsightChatMessageHistory
    from hindsight_llamaindex import HindsightChatStore

    ns = _ns()
    shared_hs.edit_transcript(ns, "chat-2", lambda _: [{"message": {"text": "hi"}, "memory_id": None}])
    for read in (lambda: HindsightChatMessageHistory(ns, "chat-2", engine=shared_hs).messages,
                 lambda: HindsightChatStore(namespace=ns, engine=shared_hs).get_messages("chat-2")):
        with pytest.raises(InvalidInputError, match="neither LangChain's nor LlamaIndex's"):
            read()
