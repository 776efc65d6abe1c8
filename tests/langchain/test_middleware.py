"""HindsightMemoryMiddleware in a real create_agent: what one thread teaches shapes a later thread's
system message for the same user, and never another user's."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain.tools import tool
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from hindsight_core import Hindsight, HindsightConfig, InvalidInputError, Layer
from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_langchain import HindsightMemoryMiddleware
from hindsight_langchain.middleware import RECALL_KEY

from .conftest import RecordingToolModel


@dataclass
class Ctx:
    user_id: str


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"It is sunny in {city}."


def _agent(hs: Hindsight, replies: list[AIMessage], prefix: str) -> tuple[Any, RecordingToolModel]:
    model = RecordingToolModel(messages=iter(replies))
    agent = create_agent(
        model,
        tools=[get_weather],
        system_prompt="You are a concise assistant.",
        middleware=[HindsightMemoryMiddleware(hs, namespace_prefix=prefix)],
        context_schema=Ctx,
        checkpointer=InMemorySaver(),
    )
    return agent, model


def _system(messages: list[Any]) -> str:
    assert isinstance(messages[0], SystemMessage)
    return str(messages[0].content)


def _first_thread(hs: Hindsight, prefix: str) -> None:
    agent, model = _agent(
        hs,
        [
            AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1"}]),
            AIMessage("Sunny in Oslo. Noted that you prefer answers in French."),
        ],
        prefix,
    )
    agent.invoke(
        {"messages": [{"role": "user", "content": "I prefer answers in French. What's the weather in Oslo?"}]},
        config={"configurable": {"thread_id": "t1"}},
        context=Ctx("ana"),
    )
    # first thread, nothing known yet: the system prompt is untouched on both model calls
    assert [_system(p) for p in model.prompts] == ["You are a concise assistant."] * 2


def test_a_preference_from_one_thread_shapes_a_later_thread_for_the_same_user_only(hs: Hindsight, ns: str) -> None:
    prefix = ns + ":"
    _first_thread(hs, prefix)
    recorded = hs.find(f"{prefix}ana")
    # what the user and the assistant said; the tool call and the tool's reply stay in the agent's
    # state (its checkpointer) and are not memories, so they are never injected later
    assert [m.role for m in recorded] == ["user", "assistant"]
    assert not any("get_weather" in m.content or "It is sunny" in m.content for m in recorded)
    assert {m.session_id for m in recorded} == {"t1"}

    agent, model = _agent(hs, [AIMessage("Bonjour !")], prefix)
    question = {"messages": [{"role": "user", "content": "Which language do I prefer for answers?"}]}
    agent.invoke(question, config={"configurable": {"thread_id": "t2"}}, context=Ctx("ana"))
    system = _system(model.prompts[0])
    assert system.startswith("You are a concise assistant.\n\n")
    assert "I prefer answers in French." in system

    other, other_model = _agent(hs, [AIMessage("Hello!")], prefix)
    other.invoke(question, config={"configurable": {"thread_id": "t3"}}, context=Ctx("bob"))
    assert _system(other_model.prompts[0]) == "You are a concise assistant."


async def test_async_agent_recalls_and_records(hs: Hindsight, ns: str) -> None:
    prefix = ns + ":"
    agent, _ = _agent(hs, [AIMessage("Got it, no peanuts.")], prefix)
    await agent.ainvoke(
        {"messages": [{"role": "user", "content": "I am allergic to peanuts."}]},
        config={"configurable": {"thread_id": "a1"}},
        context=Ctx("cy"),
    )
    assert [m.content for m in await hs.afind(f"{prefix}cy")] == ["I am allergic to peanuts.", "Got it, no peanuts."]
    agent, model = _agent(hs, [AIMessage("Avoid the satay.")], prefix)
    await agent.ainvoke(
        {"messages": [{"role": "user", "content": "What about my peanuts allergy at dinner?"}]},
        config={"configurable": {"thread_id": "a2"}},
        context=Ctx("cy"),
    )
    assert "I am allergic to peanuts." in _system(model.prompts[0])


def test_rerunning_a_thread_records_each_message_once(hs: Hindsight, ns: str) -> None:
    prefix = ns + ":"
    agent, _ = _agent(hs, [AIMessage("One."), AIMessage("Two.")], prefix)
    config: Any = {"configurable": {"thread_id": "r1"}}
    agent.invoke({"messages": [{"role": "user", "content": "first question"}]}, config=config, context=Ctx("d"))
    agent.invoke({"messages": [{"role": "user", "content": "second question"}]}, config=config, context=Ctx("d"))
    assert [m.content for m in hs.find(f"{prefix}d")] == ["first question", "One.", "second question", "Two."]


def test_a_call_without_a_user_is_refused(hs: Hindsight) -> None:
    model = RecordingToolModel(messages=iter([AIMessage("hi")]))
    agent = create_agent(model, middleware=[HindsightMemoryMiddleware(hs)])
    with pytest.raises(InvalidInputError, match="user_id"):
        agent.invoke({"messages": [{"role": "user", "content": "hello"}]})
    assert model.prompts == []


def test_context_as_a_mapping_and_a_custom_namespace(hs: Hindsight, ns: str) -> None:
    middleware = HindsightMemoryMiddleware(hs, namespace=lambda ctx: f"{ns}:{ctx['tenant']}")
    model = RecordingToolModel(messages=iter([AIMessage("ok")]))
    agent = create_agent(model, middleware=[middleware])
    agent.invoke({"messages": [{"role": "user", "content": "remember the blue door code"}]}, context={"tenant": "t9"})
    assert [m.content for m in hs.find(f"{ns}:t9")] == ["remember the blue door code", "ok"]


def test_recall_joins_a_block_system_message_or_starts_one(hs: Hindsight, ns: str) -> None:
    hs.record("I always fly with a window seat", f"{ns}:e", session_id="old")
    question = {"messages": [{"role": "user", "content": "Do I want a window seat when I fly?"}]}
    blocks = SystemMessage(content=[{"type": "text", "text": "Be brief."}])
    for system_prompt in (blocks, None):
        model = RecordingToolModel(messages=iter([AIMessage("Yes.")]))
        middleware = HindsightMemoryMiddleware(hs, namespace_prefix=f"{ns}:", record=False)
        agent = create_agent(model, system_prompt=system_prompt, middleware=[middleware], context_schema=Ctx)
        agent.invoke(question, context=Ctx("e"))
        sent = model.prompts[0][0]
        assert isinstance(sent, SystemMessage)
        if system_prompt is blocks:
            assert sent.content[0] == {"type": "text", "text": "Be brief."}
        assert "I always fly with a window seat" in sent.text
    assert [m.content for m in hs.find(f"{ns}:e")] == ["I always fly with a window seat"]  # record=False


def test_the_user_from_configurable_as_with_memory_and_the_tools_take_it(hs: Hindsight, ns: str) -> None:
    """The same run config works for every adapter: ``configurable.user_id`` names the user here too,
    and two users stay apart."""
    middleware = HindsightMemoryMiddleware(hs, namespace_prefix=ns + ":")
    model = RecordingToolModel(messages=iter([AIMessage("Noted."), AIMessage("ok"), AIMessage("Enjoy!")]))
    agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver())
    agent.invoke({"messages": [{"role": "user", "content": "I'm allergic to sesame."}]},
                 config={"configurable": {"user_id": "fay", "thread_id": "f1"}})
    agent.invoke({"messages": [{"role": "user", "content": "I love sesame bagels."}]},
                 config={"configurable": {"user_id": "gus", "thread_id": "g1"}})
    assert [m.content for m in hs.find(f"{ns}:fay")] == ["I'm allergic to sesame.", "Noted."]
    agent.invoke({"messages": [{"role": "user", "content": "Which seeds am I allergic to?"}]},
                 config={"configurable": {"user_id": "fay", "thread_id": "f2"}})
    system = _system(model.prompts[-1])
    assert "I'm allergic to sesame." in system and "bagels" not in system
    # the runtime context, when given, still wins
    assert middleware.namespace_for(type("R", (), {"context": Ctx("hal")})()) == f"{ns}:hal"


def test_a_chat_that_goes_quiet_is_distilled_without_an_end_call(
    tmp_path: Path, embedder: Any, ns: str
) -> None:
    """An agent never says a conversation ended: once the thread has gone quiet for
    ``lifecycle.consolidate_idle_s``, the engine's background worker distils it, so a one-off allergy
    becomes a fact (which the sweep keeps while it is current) with no call from the app."""
    config = HindsightConfig(lifecycle=LifecycleConfig(consolidate_idle_s=0.5))
    engine = Hindsight(tmp_path / "quiet", embedder=embedder, config=config)
    try:
        agent, _ = _agent(engine, [AIMessage("Got it, no peanuts.")], ns + ":")
        agent.invoke({"messages": [{"role": "user", "content": "I'm allergic to peanuts."}]},
                     config={"configurable": {"thread_id": "q1"}}, context=Ctx("eve"))
        namespace = f"{ns}:eve"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not engine.find(namespace, layer=Layer.SEMANTIC):
            time.sleep(0.05)
        assert [m.content for m in engine.find(namespace, layer=Layer.SEMANTIC)] == ["The user is allergic to peanuts"]
    finally:
        engine.close()


def test_last_recall_for_each_user_of_a_shared_middleware(hs: Hindsight, ns: str) -> None:
    prefix = ns + ":"
    hs.record("I am allergic to peanuts.", f"{prefix}ana", session_id="old")
    middleware = HindsightMemoryMiddleware(hs, namespace_prefix=prefix)
    for user, question in (("ana", "What am I allergic to?"), ("bob", "What's the weather in Oslo?")):
        agent = create_agent(RecordingToolModel(messages=iter([AIMessage("ok")])), tools=[get_weather],
                             middleware=[middleware], context_schema=Ctx, checkpointer=InMemorySaver())
        agent.invoke({"messages": [{"role": "user", "content": question}]},
                     config={"configurable": {"thread_id": f"t-{user}"}}, context=Ctx(user))
    ana = middleware.last_recall_for(f"{prefix}ana")
    assert ana is not None and ana.query == "What am I allergic to?" and "peanuts" in ana.to_prompt()
    assert middleware.last_recall is not None and middleware.last_recall.namespace == f"{prefix}bob"


# -- each call's own recall: in its result and in its callbacks, with other calls in flight ------------


class RetrieverRuns(BaseCallbackHandler):
    """One call's handler: the retriever runs it was told about."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: list[list[Document]] = []

    def on_retriever_start(self, serialized: Any, query: str, **kw: Any) -> None:
        self.queries.append(query)

    def on_retriever_end(self, documents: Any, **kw: Any) -> None:
        self.documents.append(list(documents))


class Gate(AgentMiddleware):
    """Holds each call before its model call until ``parties`` calls are there: the calls are in flight
    together, and every call's recall (the memory middleware's ``before_model``, which runs before this
    one's) is done before any call's model sees its prompt."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.threads = threading.Barrier(parties, timeout=30)
        self.tasks = asyncio.Barrier(parties)

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.threads.wait()
        return None

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        await asyncio.wait_for(self.tasks.wait(), 30)
        return None


class OkModel(BaseChatModel):
    """Says "ok" to anything (a fresh message per call, as calls run at once) and keeps each prompt."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "ok"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OkModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage("ok"))])


_FACTS = {"ana": "I am allergic to peanuts.", "bob": "I live in Oslo and ski every winter."}


def _together_agent(hs: Hindsight, prefix: str, parties: int) -> tuple[Any, OkModel]:
    for user, fact in _FACTS.items():
        hs.record(fact, f"{prefix}{user}", session_id="old")
    model = OkModel()
    middleware = HindsightMemoryMiddleware(hs, namespace_prefix=prefix, record=False)
    agent = create_agent(model, tools=[get_weather], system_prompt="Be brief.", middleware=[middleware, Gate(parties)],
                         context_schema=Ctx, checkpointer=InMemorySaver())
    return agent, model


def _assert_own_recall(result: dict[str, Any], runs: RetrieverRuns, user: str, question: str, prefix: str) -> None:
    """The call's returned recall and its handler's retriever run are this call's: its question, its
    user's memories, and nothing of the other user's."""
    recall = result[RECALL_KEY]
    other = next(u for u in _FACTS if u != user)
    assert (recall["query"], recall["namespace"]) == (question, f"{prefix}{user}")
    assert _FACTS[user] in recall["prompt"] and _FACTS[other] not in recall["prompt"]
    assert [m["content"] for m in recall["memories"]] == [_FACTS[user]]
    assert runs.queries == [question]  # one recall, this call's, in this call's callbacks
    [documents] = runs.documents
    assert [d.id for d in documents] == [m["memory_id"] for m in recall["memories"]]
    assert {d.metadata["namespace"] for d in documents} == {f"{prefix}{user}"}


def _assert_prompts_own(model: OkModel, calls: list[tuple[str, str]]) -> None:
    for user, question in calls:
        [prompt] = [p for p in model.prompts if p[-1].text == question]
        other = next(u for u in _FACTS if u != user)
        system = _system(prompt)
        assert _FACTS[user] in system and _FACTS[other] not in system


def test_concurrent_calls_each_return_and_trace_their_own_recall(hs: Hindsight, ns: str) -> None:
    """Two users, and two calls of one user, in flight at once on one agent: each call's result and each
    call's callback handler hold that call's recall, never another's (the middleware's ``last_recall``
    is only whoever ran last)."""
    prefix = ns + ":"
    calls = [("ana", "What am I allergic to?"), ("ana", "Which nuts must I avoid?"), ("bob", "Where do I live?")]
    agent, model = _together_agent(hs, prefix, parties=len(calls))
    runs = [RetrieverRuns() for _ in calls]

    def call(i: int) -> dict[str, Any]:
        user, question = calls[i]
        config: Any = {"configurable": {"thread_id": f"c{i}"}, "callbacks": [runs[i]]}
        result: dict[str, Any] = agent.invoke({"messages": [{"role": "user", "content": question}]},
                                              config=config, context=Ctx(user))
        return result

    with ThreadPoolExecutor(len(calls)) as pool:
        results = list(pool.map(call, range(len(calls))))
    for i, (user, question) in enumerate(calls):
        _assert_own_recall(results[i], runs[i], user, question, prefix)
        # the thread's checkpoint keeps it as it was returned (plain JSON through the checkpointer)
        saved = agent.get_state({"configurable": {"thread_id": f"c{i}"}}).values[RECALL_KEY]
        assert saved == results[i][RECALL_KEY]
    _assert_prompts_own(model, calls)


async def test_concurrent_async_calls_each_return_and_trace_their_own_recall(hs: Hindsight, ns: str) -> None:
    prefix = ns + ":"
    calls = [("ana", "What am I allergic to?"), ("bob", "Where do I live?")]
    agent, model = _together_agent(hs, prefix, parties=len(calls))
    runs = [RetrieverRuns() for _ in calls]
    results = await asyncio.gather(*(
        agent.ainvoke({"messages": [{"role": "user", "content": question}]},
                      config={"configurable": {"thread_id": f"a{i}"}, "callbacks": [runs[i]]}, context=Ctx(user))
        for i, (user, question) in enumerate(calls)
    ))
    for i, (user, question) in enumerate(calls):
        _assert_own_recall(results[i], runs[i], user, question, prefix)
    _assert_prompts_own(model, calls)


def test_each_call_of_a_thread_returns_its_own_recall_even_when_empty(hs: Hindsight, ns: str) -> None:
    """The state's recall is the latest model call's, replaced on every call of a thread: a question
    nothing answers returns an empty recall (nothing injected), not the previous call's."""
    prefix = ns + ":"
    hs.record("My sister is called Lena.", f"{prefix}ivy", session_id="old")
    agent, model = _agent(hs, [AIMessage("Lena."), AIMessage("Hello!")], prefix)
    config: Any = {"configurable": {"thread_id": "e1"}}
    first = agent.invoke({"messages": [{"role": "user", "content": "What is my sister called?"}]},
                         config=config, context=Ctx("ivy"))
    assert "My sister is called Lena." in first[RECALL_KEY]["prompt"]
    second = agent.invoke({"messages": [{"role": "user", "content": "thanks!"}]}, config=config, context=Ctx("ivy"))
    assert second[RECALL_KEY] == {"query": "thanks!", "namespace": f"{prefix}ivy", "prompt": "", "memories": []}
    assert _system(model.prompts[-1]) == "You are a concise assistant."
