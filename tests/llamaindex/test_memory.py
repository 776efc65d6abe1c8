"""HindsightMemory as the memory of real LlamaIndex agents and chat engines (the LLM is an upstream mock
that records what it was sent)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall, MockLLM
from llama_index.core.memory.types import BaseMemory
from workflows import Context
from workflows.context.serializers import JsonSerializer

from hindsight_core import Hindsight, InvalidInputError
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_llamaindex import HindsightMemory

FACT = "I am allergic to peanuts"
QUESTION = "What am I allergic to?"


def _ns() -> str:
    return f"user:{uuid.uuid4().hex[:8]}"


def _seen(llm: MockFunctionCallingLLMWithChatMemoryOfLastCall) -> str:
    return "\n".join(str(m.content) for m in llm.last_chat_messages or [])


def _system_text(llm: MockFunctionCallingLLMWithChatMemoryOfLastCall) -> str:
    return "\n".join(str(m.content) for m in llm.last_chat_messages or [] if m.role == MessageRole.SYSTEM)


async def test_function_agent_remembers_across_sessions_and_never_across_users(shared_hs: Hindsight) -> None:
    alice, bob = _ns(), _ns()
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent = FunctionAgent(tools=[], llm=llm, system_prompt="You are a helpful travel assistant.")

    first = HindsightMemory.from_defaults(namespace=alice, session_id="s1", engine=shared_hs)
    await agent.run(user_msg=FACT, memory=first)
    assert [m.role for m in await first.aget_all()] == [MessageRole.USER, MessageRole.ASSISTANT]

    later = HindsightMemory.from_defaults(namespace=alice, session_id="s2", engine=shared_hs)
    await agent.run(user_msg=QUESTION, memory=later)
    assert FACT in _system_text(llm)  # recalled from session s1 into a system message
    assert (await later.aget_all())[0].content == QUESTION  # the log holds no recall
    assert later.last_recall is not None and later.last_recall.hits

    other = HindsightMemory.from_defaults(namespace=bob, session_id="s2", engine=shared_hs)
    await agent.run(user_msg=QUESTION, memory=other)
    assert "peanut" not in _seen(llm)


async def test_memory_survives_agent_context_save_and_restore(shared_hs: Hindsight) -> None:
    ns = _ns()
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent = FunctionAgent(tools=[], llm=llm)
    memory = HindsightMemory.from_defaults(namespace=ns, session_id="ctx", engine=shared_hs, k=3)
    ctx = Context(agent)
    await agent.run(user_msg="My budget for the Lisbon trip is 3000 euros", memory=memory, ctx=ctx)

    saved = ctx.to_dict(serializer=JsonSerializer())
    restored_ctx = Context.from_dict(agent, saved, serializer=JsonSerializer())
    restored = await restored_ctx.store.get("memory")
    assert isinstance(restored, HindsightMemory) and restored is not memory
    assert (restored.namespace, restored.session_id, restored.k) == (ns, "ctx", 3)
    assert restored.engine is shared_hs  # the live engine of the same data directory

    await agent.run(user_msg="Which city am I going to?", ctx=restored_ctx)
    contents = [m.content for m in llm.last_chat_messages or []]
    assert "My budget for the Lisbon trip is 3000 euros" in contents  # the session log came back
    assert [m.content for m in memory.get_all()][-1] == "Which city am I going to?"


def test_simple_chat_engine_end_to_end(shared_hs: Hindsight) -> None:
    ns = _ns()
    first = SimpleChatEngine.from_defaults(
        llm=MockLLM(), memory=HindsightMemory.from_defaults(namespace=ns, engine=shared_hs)
    )
    first.chat(FACT)
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    memory = HindsightMemory.from_defaults(namespace=ns, engine=shared_hs)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Be brief.")
    engine.chat(QUESTION)
    sent = llm.last_chat_messages or []
    assert sent[0].content == "Be brief."  # the engine's own prefix stays first
    # The memories follow the user message they were recalled for.
    assert [m.role for m in sent] == [MessageRole.SYSTEM, MessageRole.USER, MessageRole.SYSTEM]
    assert sent[1].content == QUESTION and FACT in str(sent[2].content)
    assert [m.role for m in memory.get_all()] == [MessageRole.USER, MessageRole.ASSISTANT]


async def test_simple_chat_engine_async_and_memory_cls(
    fresh_path: Path, embedder: E5Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_PATH", str(fresh_path))
    import hindsight_core.engine as engine_module

    monkeypatch.setattr(engine_module, "_shared", Hindsight(fresh_path, embedder=embedder))
    try:
        history = [ChatMessage(role="user", content="Call me Ana"), ChatMessage(role="assistant", content="Hi Ana")]
        # memory_cls= builds the memory with no user: refused with a hint instead of a shared "default"
        with pytest.raises(InvalidInputError, match=r"memory=HindsightMemory.from_defaults.*needs namespace="):
            SimpleChatEngine.from_defaults(llm=MockLLM(), memory_cls=HindsightMemory, chat_history=history)
        engine = SimpleChatEngine.from_defaults(
            llm=MockLLM(), memory=HindsightMemory.from_defaults(namespace="user:ana", chat_history=history)
        )
        await engine.achat("I moved to Porto last month")
        memory = engine._memory
        assert isinstance(memory, HindsightMemory) and memory.namespace == "user:ana"
        log = memory.get_all()
        assert [m.content for m in log[:3]] == ["Call me Ana", "Hi Ana", "I moved to Porto last month"]
        assert [m.role for m in log] == [MessageRole.USER, MessageRole.ASSISTANT] * 2
        found = memory.engine.find("user:ana", session_id=memory.session_id)
        assert found[2].content == "I moved to Porto last month"
        assert memory.engine.namespaces() == ["user:ana"]
    finally:
        engine_module._shared.close()  # type: ignore[union-attr]


def test_set_appends_only_new_tail_and_reset_keeps_long_term(shared_hs: Hindsight) -> None:
    ns = _ns()
    memory = HindsightMemory.from_defaults(namespace=ns, session_id="s", engine=shared_hs)
    history = [ChatMessage(role="user", content=FACT), ChatMessage(role="assistant", content="Noted.")]
    memory.set(history)
    memory.set([*history, ChatMessage(role="user", content="And I love hiking")])
    episodes = shared_hs.find(ns, session_id="s", layer="episodic")
    assert [e.content for e in episodes] == [FACT, "Noted.", "And I love hiking"]  # nothing recorded twice
    memory.reset()
    assert memory.get_all() == []
    assert len(shared_hs.find(ns, session_id="s", layer="episodic")) == 3  # forgetting is explicit


def test_recall_is_injected_into_the_user_message_when_asked(shared_hs: Hindsight) -> None:
    ns = _ns()
    HindsightMemory.from_defaults(namespace=ns, session_id="old", engine=shared_hs).put(
        ChatMessage(role="user", content=FACT)
    )
    memory = HindsightMemory.from_defaults(namespace=ns, session_id="new", engine=shared_hs, insert_method="user")
    memory.put(ChatMessage(role="user", content=QUESTION))
    messages = memory.get()
    assert [m.role for m in messages] == [MessageRole.USER]
    assert FACT in str(messages[0].content) and str(messages[0].content).endswith(QUESTION)
    assert memory.get_all()[0].content == QUESTION  # stored message untouched


def test_nothing_relevant_injects_nothing_and_visible_turns_are_not_repeated(shared_hs: Hindsight) -> None:
    ns = _ns()
    memory = HindsightMemory.from_defaults(namespace=ns, session_id="s", engine=shared_hs)
    memory.put(ChatMessage(role="user", content=FACT))
    messages = memory.get(input="What am I allergic to?")
    # The only matching memory is already in the window verbatim: no system message is added.
    assert [m.role for m in messages] == [MessageRole.USER]
    assert memory.get(input="What is the weather like on Mars?") == memory.get_all()


def test_token_limit_trims_oldest_and_never_starts_on_a_reply(shared_hs: Hindsight) -> None:
    memory = HindsightMemory.from_defaults(namespace=_ns(), session_id="s", engine=shared_hs, token_limit=30)
    for i in range(6):
        memory.put(ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"turn {i} " + "word " * 8))
    window = [m for m in memory.get() if m.role != MessageRole.SYSTEM]  # recall may bring older turns back
    assert 0 < len(window) < 6 and window[0].role == MessageRole.USER
    assert window[-1].content == memory.get_all()[-1].content
    assert len(memory.get_all()) == 6


def test_contract_details(shared_hs: Hindsight) -> None:
    memory = HindsightMemory.from_defaults(namespace=_ns(), engine=shared_hs)
    assert isinstance(memory, BaseMemory) and memory.class_name() == "HindsightMemory"
    assert "__len__" not in vars(HindsightMemory) and "__bool__" not in vars(HindsightMemory)
    assert bool(memory)  # agents test the memory's truthiness; an empty one must still count
    assert memory.session_id != HindsightMemory.from_defaults(namespace="x", engine=shared_hs).session_id
    with pytest.raises(ValueError):
        HindsightMemory.from_defaults(namespace=_ns(), engine=shared_hs, bogus=1)
    with pytest.raises(ValueError):
        HindsightMemory.from_defaults(namespace="bad namespace", engine=shared_hs)


async def test_react_agent_and_agent_workflow_take_it_as_memory(shared_hs: Hindsight) -> None:
    from llama_index.core.agent.workflow import AgentWorkflow, ReActAgent

    ns = _ns()
    HindsightMemory.from_defaults(namespace=ns, session_id="old", engine=shared_hs).put(
        ChatMessage(role="user", content=FACT)
    )

    def react_reply(messages: object, **kwargs: object) -> ChatMessage:
        return ChatMessage(role="assistant", content="Thought: I can answer without tools.\nAnswer: Noted.")

    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=react_reply)
    react = ReActAgent(name="helper", description="Answers questions.", tools=[], llm=llm)
    memory = HindsightMemory.from_defaults(namespace=ns, session_id="react", engine=shared_hs)
    assert str(await react.run(user_msg=QUESTION, memory=memory)) == "Noted."
    assert FACT in _seen(llm)
    log = memory.get_all()
    assert log[0].content == QUESTION and str(log[1].content).endswith("Answer: Noted.")

    workflow = AgentWorkflow(agents=[ReActAgent(name="solo", description="d", tools=[], llm=llm)])
    memory = HindsightMemory.from_defaults(namespace=ns, session_id="workflow", engine=shared_hs)
    llm.reset_memory()
    await workflow.run(user_msg=QUESTION, memory=memory)
    assert FACT in _seen(llm)
    assert [m.role for m in memory.get_all()] == [MessageRole.USER, MessageRole.ASSISTANT]


async def test_tool_calls_and_results_round_trip_through_the_session_log(shared_hs: Hindsight) -> None:
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.core.tools import FunctionTool

    def get_weather(city: str = "Lisbon") -> str:
        """Current weather in a city."""
        return f"Sunny and 24 degrees in {city}"

    ns = _ns()
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(fn=get_weather)], llm=llm)
    memory = HindsightMemory.from_defaults(namespace=ns, session_id="tools", engine=shared_hs)
    assert str(await agent.run(user_msg="How is the weather?", memory=memory)) == "Tool calls complete."

    log = memory.get_all()
    assert [m.role for m in log] == [MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.ASSISTANT]
    call = next(b for b in log[1].blocks if isinstance(b, ToolCallBlock))
    assert (call.tool_name, call.tool_kwargs) == ("get_weather", {"city": "Lisbon"})
    assert log[2].content == "Sunny and 24 degrees in Lisbon"
    assert log[2].additional_kwargs["tool_call_id"] == call.tool_call_id
    # What the model saw on its second call is the stored log, tool call and result intact.
    seen = [m for m in llm.last_chat_messages or [] if m.role != MessageRole.SYSTEM]
    assert [m.role for m in seen] == [MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL]
    assert seen[1].blocks == log[1].blocks
    # the tool call and its result are kept in the log for replay, but are not memories
    episodes = [e.content for e in shared_hs.find(ns, session_id="tools")]
    assert episodes == ["How is the weather?", "Tool calls complete."]


def test_session_log_is_durable_across_engines(fresh_path: Path, embedder: E5Embedder) -> None:
    with Hindsight(fresh_path, embedder=embedder) as hs:
        memory = HindsightMemory.from_defaults(namespace="user:1", session_id="s", engine=hs)
        memory.put_messages([ChatMessage(role="user", content=FACT), ChatMessage(role="assistant", content="Noted.")])
    with Hindsight(fresh_path, embedder=embedder) as hs:
        again = HindsightMemory.from_defaults(namespace="user:1", session_id="s", engine=hs)
        assert [(m.role, m.content) for m in again.get_all()] == [
            (MessageRole.USER, FACT),
            (MessageRole.ASSISTANT, "Noted."),
        ]


def test_window_matches_chat_memory_buffer(shared_hs: Hindsight) -> None:
    from llama_index.core.memory import ChatMemoryBuffer

    roles = ["assistant", "user", "assistant", "tool", "assistant", "user", "assistant", "user"]
    history = [
        ChatMessage(role=r, content=f"{r} turn {i} " + "lorem ipsum " * (i % 3 + 1)) for i, r in enumerate(roles)
    ]
    for limit in (5, 12, 20, 30, 45, 200):
        ours = HindsightMemory.from_defaults(namespace=_ns(), engine=shared_hs, token_limit=limit)
        ours.set(history)
        buffer = ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=limit)
        got = [m.content for m in ours.get(input="zzzz unrelated") if m.role != MessageRole.SYSTEM]
        assert got == [m.content for m in buffer.get()], limit
