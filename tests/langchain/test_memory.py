"""HindsightMemory is a drop-in for ConversationBufferMemory: the same chains, run with both, see the
same buffers and prompts turn for turn; with Hindsight they also see what an earlier session said."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_classic.chains import ConversationChain, LLMChain
from langchain_classic.memory import ConversationBufferMemory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from hindsight_core import Hindsight
from hindsight_langchain import HindsightChatMessageHistory, HindsightMemory

from .conftest import RecordingListModel

REPLIES = ["Hello Wei!", "Noted.", "Sure, here is a plan.", "Goodbye."]
TURNS = ["Hi, I'm Wei.", "I work as a nurse in Lyon.", "Plan my week please.", "Bye!"]


def _buffer_memory(**kwargs: Any) -> ConversationBufferMemory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return ConversationBufferMemory(**kwargs)


def _conversation(memory: Any) -> tuple[RecordingListModel, list[Any]]:
    """Run TURNS through a ConversationChain; the prompts the model saw and the buffer after each turn."""
    model = RecordingListModel(responses=REPLIES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = ConversationChain(llm=model, memory=memory)
    buffers = []
    for text in TURNS:
        chain.invoke({"input": text})
        buffers.append(memory.buffer)
    return model, buffers


def _contents(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


def test_conversation_chain_sees_the_same_buffers_and_prompts(hs: Hindsight, ns: str) -> None:
    ref_model, ref_buffers = _conversation(_buffer_memory())
    ours = HindsightMemory(namespace=ns, engine=hs)
    our_model, our_buffers = _conversation(ours)
    assert our_buffers == ref_buffers
    assert [_contents(p) for p in our_model.prompts] == [_contents(p) for p in ref_model.prompts]
    assert "Human: I work as a nurse in Lyon.\nAI: Noted." in our_buffers[-1]


def test_a_fact_from_an_earlier_session_reaches_the_prompt(hs: Hindsight, ns: str) -> None:
    earlier = HindsightMemory(namespace=ns, engine=hs, session_id="monday")
    earlier.save_context({"input": "I am allergic to peanuts."}, {"response": "I'll remember that."})

    ref_model, ref_buffers = _conversation(_buffer_memory())
    turns_model = RecordingListModel(responses=["Try the apple pie."])
    ours = HindsightMemory(namespace=ns, engine=hs, session_id="friday")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = ConversationChain(llm=turns_model, memory=ours)
    chain.invoke({"input": "Which dessert has no peanuts, given my allergy?"})
    prompt = turns_model.prompts[0][0].content
    assert isinstance(prompt, str)
    assert "I am allergic to peanuts." in prompt
    context = ours.last_recall.to_prompt()  # type: ignore[union-attr]
    assert ours.last_recall is not None and ours.last_recall.hits[0].memory.session_id == "monday"
    # apart from the one System block in front of the history, it is ConversationBufferMemory's prompt
    reference = _buffer_memory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ref_prompt = ConversationChain(llm=ref_model, memory=reference).prompt.format(
            history="", input="Which dessert has no peanuts, given my allergy?"
        )
    assert prompt.replace(f"System: {context}", "") == ref_prompt
    # the buffer stays the session's own turns
    assert ours.buffer == "Human: Which dessert has no peanuts, given my allergy?\nAI: Try the apple pie."
    assert ref_buffers  # the reference ran the same chain class without error


def _chat_chain(memory: Any) -> tuple[RecordingListModel, list[Any]]:
    model = RecordingListModel(responses=REPLIES)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are a helpful assistant."), MessagesPlaceholder("chat_history"), ("human", "{question}")]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = LLMChain(llm=model, prompt=prompt, memory=memory)
    buffers = []
    for text in TURNS:
        chain.invoke({"question": text})
        buffers.append(list(memory.buffer))
    return model, buffers


def test_llm_chain_with_messages_placeholder(hs: Hindsight, ns: str) -> None:
    ref_model, ref_buffers = _chat_chain(_buffer_memory(memory_key="chat_history", return_messages=True))
    ours = HindsightMemory(namespace=ns, engine=hs, memory_key="chat_history", return_messages=True)
    our_model, our_buffers = _chat_chain(ours)
    assert [_contents(b) for b in our_buffers] == [_contents(b) for b in ref_buffers]
    assert all(isinstance(m, HumanMessage | AIMessage) for m in our_buffers[-1])
    assert [_contents(p) for p in our_model.prompts] == [_contents(p) for p in ref_model.prompts]

    # a later session of the same user: the earlier nurse fact leads the placeholder as a system message
    later = HindsightMemory(namespace=ns, engine=hs, memory_key="chat_history", return_messages=True)
    model = RecordingListModel(responses=["You work as a nurse."])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are a helpful assistant."), MessagesPlaceholder("chat_history"), ("human", "{question}")]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        LLMChain(llm=model, prompt=prompt, memory=later).invoke({"question": "Where do I work as a nurse?"})
    sent = model.prompts[0]
    assert isinstance(sent[1], SystemMessage) and "I work as a nurse in Lyon." in sent[1].content
    assert _contents([sent[0], *sent[2:]]) == [
        ("system", "You are a helpful assistant."),
        ("human", "Where do I work as a nurse?"),
    ]


def test_fields_defaults_and_variables_match(hs: Hindsight, ns: str) -> None:
    ours, ref = HindsightMemory(namespace=ns, engine=hs), _buffer_memory()
    for name in ("memory_key", "input_key", "output_key", "return_messages", "human_prefix", "ai_prefix"):
        assert getattr(ours, name) == getattr(ref, name), name
    assert ours.memory_variables == ref.memory_variables == ["history"]
    assert ours.load_memory_variables({}) == ref.load_memory_variables({}) == {"history": ""}
    assert isinstance(ours.chat_memory, HindsightChatMessageHistory)
    messages = HindsightMemory(namespace=ns, engine=hs, return_messages=True)
    assert messages.load_memory_variables({"input": "x"}) == {"history": []}
    assert HindsightMemory(namespace=ns, engine=hs, context_key="hindsight_context").memory_variables == [
        "history",
        "hindsight_context",
    ]


@pytest.mark.parametrize(
    ("inputs", "outputs", "kwargs"),
    [
        ({"a": "1", "b": "2"}, {"out": "x"}, {}),  # two candidate inputs
        ({"history": "h"}, {"out": "x"}, {}),  # no input left once memory keys are removed
        ({"q": "1"}, {"x": "1", "y": "2"}, {}),  # two outputs, none called "output"
        ({"q": "1"}, {"out": "x"}, {"input_key": "missing"}),
    ],
)
def test_save_context_refuses_what_the_reference_refuses(
    hs: Hindsight, ns: str, inputs: dict[str, str], outputs: dict[str, str], kwargs: dict[str, Any]
) -> None:
    ours = HindsightMemory(namespace=ns, engine=hs, **kwargs)
    ref = _buffer_memory(**kwargs)
    with pytest.raises((ValueError, KeyError)) as ref_error:
        ref.save_context(inputs, outputs)
    with pytest.raises(type(ref_error.value)) as our_error:
        ours.save_context(inputs, outputs)
    assert str(our_error.value) == str(ref_error.value)
    assert ours.buffer == "" and hs.find(ns) == []  # a refused call changes nothing


def test_output_key_selection_matches(hs: Hindsight, ns: str) -> None:
    ours, ref = HindsightMemory(namespace=ns, engine=hs), _buffer_memory()
    for memory in (ours, ref):
        with pytest.warns(UserWarning, match="output"):
            memory.save_context({"input": "hi", "stop": ["\n"]}, {"output": "hello", "extra": "ignored"})
        memory.save_context({"question": "q2"}, {"text": "a2"})
    assert ours.buffer == ref.buffer == "Human: hi\nAI: hello\nHuman: q2\nAI: a2"


def test_clear_empties_the_buffer_and_keeps_long_term_memory(hs: Hindsight, ns: str) -> None:
    memory = HindsightMemory(namespace=ns, engine=hs, session_id="s1")
    memory.save_context({"input": "My cat is called Miso."}, {"output": "Cute name!"})
    memory.clear()
    assert memory.buffer == ""
    loaded = memory.load_memory_variables({"input": "What is my cat Miso like?"})
    assert "My cat is called Miso." in loaded["history"] and loaded["history"].startswith("System: ")


def test_context_key_keeps_recall_out_of_the_history(hs: Hindsight, ns: str) -> None:
    HindsightMemory(namespace=ns, engine=hs).save_context({"input": "My cat is called Miso."}, {"output": "Ok"})
    memory = HindsightMemory(namespace=ns, engine=hs, context_key="hindsight_context")
    loaded = memory.load_memory_variables({"input": "What is my cat Miso like?"})
    assert loaded["history"] == ""
    assert "My cat is called Miso." in loaded["hindsight_context"]


async def test_async_twins_match_the_reference(hs: Hindsight, ns: str) -> None:
    ours, ref = HindsightMemory(namespace=ns, engine=hs, return_messages=True), _buffer_memory(return_messages=True)
    for memory in (ours, ref):
        await memory.asave_context({"input": "I'm Wei."}, {"output": "Hi Wei"})
        await memory.asave_context({"input": "I live in Lyon."}, {"output": "Nice city"})
    assert _contents(await ours.abuffer()) == _contents(await ref.abuffer())
    assert await ours.abuffer_as_str() == await ref.abuffer_as_str()
    assert _contents((await ours.aload_memory_variables({"input": "hello"}))["history"]) == _contents(
        (await ref.aload_memory_variables({"input": "hello"}))["history"]
    )
    later = HindsightMemory(namespace=ns, engine=hs, return_messages=True)
    loaded = await later.aload_memory_variables({"input": "Do I live in Lyon?"})
    assert isinstance(loaded["history"][0], SystemMessage) and "I live in Lyon." in loaded["history"][0].content
    await ours.aclear()
    await ref.aclear()
    assert await ours.abuffer() == await ref.abuffer() == []


def test_namespaces_are_walls(hs: Hindsight, ns: str) -> None:
    HindsightMemory(namespace=ns, engine=hs).save_context({"input": "My cat is called Miso."}, {"output": "Ok"})
    other = HindsightMemory(namespace=ns + "-other", engine=hs)
    assert other.load_memory_variables({"input": "What is my cat Miso like?"}) == {"history": ""}


def test_a_malformed_namespace_is_refused(hs: Hindsight) -> None:
    from hindsight_core import InvalidInputError

    with pytest.raises(InvalidInputError):
        HindsightMemory(namespace="two words", engine=hs)


def test_an_ended_session_is_consolidated_into_facts_citing_their_episodes(hs: Hindsight, ns: str) -> None:
    monday = HindsightMemory(namespace=ns, engine=hs, session_id="monday")
    monday.save_context({"input": "I'm allergic to peanuts."}, {"output": "Noted."})
    monday.end_session()
    assert hs.wait_for_consolidation(timeout=60)
    episode = hs.find(ns, session_id="monday")[0]
    facts = HindsightMemory(namespace=ns, engine=hs, layers=["semantic"], context_key="facts")
    loaded = facts.load_memory_variables({"input": "what about my peanuts allergy"})
    hit = facts.last_recall.hits[0]  # type: ignore[union-attr]
    assert hit.memory.layer.value == "semantic" and episode.id in hit.memory.source_ids
    assert [s.id for s in hit.sources] == [episode.id]
    assert hit.memory.content in loaded["facts"]


def test_without_an_engine_the_process_wide_default_is_shared(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, ns: str
) -> None:
    from hindsight_langchain import HindsightRetriever, HindsightStore

    monkeypatch.setenv("HINDSIGHT_PATH", str(tmp_path / "default"))
    memory = HindsightMemory(namespace=ns)
    try:
        assert memory.hindsight.path == tmp_path / "default"
        assert HindsightStore().engine is memory.hindsight
        assert HindsightRetriever(namespace=ns).hindsight is memory.hindsight
        memory.save_context({"input": "hello there"}, {"output": "hi"})
        assert [m.content for m in memory.hindsight.find(ns)] == ["hello there", "hi"]
    finally:
        memory.hindsight.close()


def test_a_very_long_input_works_as_with_the_reference(hs: Hindsight, ns: str) -> None:
    long_input = "Tell me about my trip. " * 500  # longer than recall accepts as a query
    ours, ref = HindsightMemory(namespace=ns, engine=hs), _buffer_memory()
    assert ours.load_memory_variables({"input": long_input}) == ref.load_memory_variables({"input": long_input})


def test_max_token_limit_keeps_the_latest_turns_and_recalls_older_ones(hs: Hindsight, ns: str) -> None:
    memory = HindsightMemory(namespace=ns, engine=hs, max_token_limit=25)
    memory.save_context({"input": "My cat is called Miso and she is ginger."}, {"output": "Lovely."})
    for i in range(3):
        memory.save_context({"input": f"Unrelated question number {i}"}, {"output": f"Answer {i}"})
    window = memory.buffer_as_messages
    assert 0 < len(window) < 8 and window[-1].content == "Answer 2"
    assert all("Miso" not in m.content for m in window)
    loaded = memory.load_memory_variables({"input": "What is my cat Miso like?"})
    # the turn that fell out of the window comes back through recall, ahead of the window
    assert loaded["history"].startswith("System: ") and "My cat is called Miso" in loaded["history"]
    assert loaded["history"].endswith(memory.buffer_as_str)
