"""HindsightChatMessageHistory against the reference InMemoryChatMessageHistory, and in
RunnableWithMessageHistory."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import HindsightChatMessageHistory

from .conftest import RecordingListModel


def _reference() -> InMemoryChatMessageHistory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return InMemoryChatMessageHistory()


TOOL_TURN: list[BaseMessage] = [
    SystemMessage("You are a travel assistant."),
    HumanMessage("What's the weather in Lisbon?", id="m1"),
    AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Lisbon", "days": 2}, "id": "call_1"}]),
    ToolMessage('{"forecast": "sunny", "max": 24}', tool_call_id="call_1", name="weather"),
    AIMessage(
        [{"type": "text", "text": "Sunny, up to 24°C."}],
        additional_kwargs={"refusal": None},
        response_metadata={"model": "x"},
    ),
    HumanMessage("谢谢！明天呢？"),
]


def _same(a: list[BaseMessage], b: list[BaseMessage]) -> None:
    assert [type(m) for m in a] == [type(m) for m in b]
    assert [m.model_dump() for m in a] == [m.model_dump() for m in b]


def test_same_messages_as_the_reference_through_every_operation(hs: Hindsight, ns: str) -> None:
    ours, ref = HindsightChatMessageHistory(ns, "s1", engine=hs), _reference()
    for history in (ours, ref):
        history.add_user_message("hello")
        history.add_ai_message("hi, how can I help?")
        history.add_messages(TOOL_TURN)
    _same(ours.messages, ref.messages)
    ours.clear()
    ref.clear()
    _same(ours.messages, ref.messages)
    assert ours.messages == []
    for history in (ours, ref):
        history.add_messages(TOOL_TURN[1:3])
    _same(ours.messages, ref.messages)
    # a new object on the same session reads the same log (it lives in the engine, not the object)
    _same(HindsightChatMessageHistory(ns, "s1", engine=hs).messages, ref.messages)


async def test_async_twins_match_the_reference(hs: Hindsight, ns: str) -> None:
    ours, ref = HindsightChatMessageHistory(ns, "s1", engine=hs), _reference()
    for history in (ours, ref):
        await history.aadd_messages(TOOL_TURN)
    _same(await ours.aget_messages(), await ref.aget_messages())
    await ours.aclear()
    await ref.aclear()
    assert await ours.aget_messages() == [] == await ref.aget_messages()


def test_tool_calls_and_tool_messages_survive_a_round_trip(hs: Hindsight, ns: str) -> None:
    HindsightChatMessageHistory(ns, "s1", engine=hs).add_messages(TOOL_TURN)
    back = HindsightChatMessageHistory(ns, "s1", engine=hs).messages
    assert back[2].tool_calls == [  # type: ignore[attr-defined]
        {"name": "weather", "args": {"city": "Lisbon", "days": 2}, "id": "call_1", "type": "tool_call"}
    ]
    assert isinstance(back[3], ToolMessage) and back[3].tool_call_id == "call_1" and back[3].name == "weather"
    assert back[1].id == "m1" and back[4].content == TOOL_TURN[4].content
    assert back[4].additional_kwargs == {"refusal": None} and back[4].response_metadata == {"model": "x"}


def test_the_log_is_a_transcript_and_only_what_people_said_becomes_memory(hs: Hindsight, ns: str) -> None:
    """One session-log concept for both frameworks: the LangChain history is the engine transcript of
    (namespace, session_id), entries {"message", "memory_id"}. Tool calls, tool results and the system
    prompt are kept there for replay but are not recorded as memories."""
    HindsightChatMessageHistory(ns, "s1", engine=hs).add_messages(TOOL_TURN)
    entries = hs.transcript(ns, "s1")
    assert entries is not None and len(entries) == len(TOOL_TURN)
    recorded = {m.id: m.content for m in hs.find(ns, session_id="s1")}
    said = ["What's the weather in Lisbon?", "Sunny, up to 24°C.", "谢谢！明天呢？"]
    assert sorted(recorded.values()) == sorted(said)
    assert [e["memory_id"] is not None for e in entries] == [False, True, False, False, True, True]
    assert all(recorded[e["memory_id"]] for e in entries if e["memory_id"])
    assert not any("weather(" in text or "forecast" in text for text in recorded.values())


def test_sessions_and_namespaces_are_separate(hs: Hindsight, ns: str) -> None:
    HindsightChatMessageHistory(ns, "s1", engine=hs).add_user_message("in s1")
    HindsightChatMessageHistory(ns, "s2", engine=hs).add_user_message("in s2")
    HindsightChatMessageHistory(ns + "x", "s1", engine=hs).add_user_message("other user")
    assert [m.content for m in HindsightChatMessageHistory(ns, "s1", engine=hs).messages] == ["in s1"]
    assert [m.content for m in HindsightChatMessageHistory(ns, "s2", engine=hs).messages] == ["in s2"]


def test_clear_keeps_long_term_memory_and_forget_deletes(hs: Hindsight, ns: str) -> None:
    history = HindsightChatMessageHistory(ns, "s1", engine=hs)
    history.add_user_message("I'm allergic to peanuts")
    history.clear()
    assert history.messages == []
    # clear() deletes the session log (a transcript); it writes no "cleared" marker memory
    assert hs.transcript(ns, "s1") is None
    assert [m.content for m in hs.find(ns, session_id="s1")] == ["I'm allergic to peanuts"]
    hits = hs.recall("what about my peanuts allergy", ns).hits
    assert [h.memory.content for h in hits] == ["I'm allergic to peanuts"]
    history.add_user_message("new start")
    assert history.forget() == 2  # the old turn and the new turn
    assert history.messages == [] and hs.recall("what about my peanuts allergy", ns).hits == []


def test_bad_input_is_refused(hs: Hindsight, ns: str) -> None:
    with pytest.raises(InvalidInputError):
        HindsightChatMessageHistory("bad namespace", "s1", engine=hs)
    with pytest.raises(ValueError):
        HindsightChatMessageHistory(ns, "", engine=hs)


def test_runnable_with_message_history_sees_the_stable_log(hs: Hindsight, ns: str) -> None:
    model = RecordingListModel(responses=["Nice to meet you, Ana.", "You are Ana."])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    histories: dict[str, HindsightChatMessageHistory] = {}

    def get(session_id: str) -> HindsightChatMessageHistory:
        return histories.setdefault(session_id, HindsightChatMessageHistory(ns, session_id, engine=hs))

    chain = RunnableWithMessageHistory(prompt | model, get, input_messages_key="input", history_messages_key="history")
    config = {"configurable": {"session_id": "chat-1"}}
    chain.invoke({"input": "I'm Ana."}, config=config)
    chain.invoke({"input": "Who am I?"}, config=config)
    assert [m.content for m in model.prompts[1]] == ["Be brief.", "I'm Ana.", "Nice to meet you, Ana.", "Who am I?"]
    assert [m.content for m in get("chat-1").messages] == [
        "I'm Ana.",
        "Nice to meet you, Ana.",
        "Who am I?",
        "You are Ana.",
    ]
