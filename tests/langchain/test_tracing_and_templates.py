"""Recall shows up in LangChain callbacks on every path (middleware, classic memory, tools); tools fill
a templated namespace per call from the run's config or the agent's context."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain_classic.chains import ConversationChain
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.tracers.context import collect_runs

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import HindsightMemory, HindsightMemoryMiddleware, memory_tools

from .conftest import RecordingListModel, RecordingToolModel


@dataclass
class Ctx:
    user_id: str


class RetrieverRuns(BaseCallbackHandler):
    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: list[list[Document]] = []
        self.names: list[str | None] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kw: Any) -> None:
        self.queries.append(query)
        self.names.append(kw.get("name"))

    def on_retriever_end(self, documents: Any, **kw: Any) -> None:
        self.documents.append(list(documents))


def test_tools_fill_a_templated_namespace_per_call(hs: Hindsight, ns: str) -> None:
    recall, save, _ = memory_tools(ns + ":{user_id}", engine=hs)
    assert (recall.name, save.name) == ("recall_memory", "save_memory")
    assert "config" not in save.args  # the run's config is injected, not asked of the model
    save.invoke({"content": "Ana is vegan.", "importance": 4}, config={"configurable": {"user_id": "ana"}})
    assert [m.content for m in hs.find(f"{ns}:ana")] == ["Ana is vegan."]
    assert "Ana is vegan." in recall.invoke({"query": "Is Ana vegan?"}, config={"configurable": {"user_id": "ana"}})
    assert recall.invoke({"query": "Is Ana vegan?"}, config={"configurable": {"user_id": "bob"}}) == (
        "No relevant memories."
    )
    with pytest.raises(InvalidInputError, match="user_id"):
        save.invoke({"content": "lost"})
    assert [n for n in hs.namespaces() if n.startswith(ns)] == [f"{ns}:ana"]


def test_a_langmem_style_label_template(hs: Hindsight, ns: str) -> None:
    _, save, _ = memory_tools((ns, "{user_id}"), engine=hs)
    save.invoke({"content": "Likes jazz."}, config={"configurable": {"user_id": "dee"}})
    assert [m.content for m in hs.find(f"{ns}/dee")] == ["Likes jazz."]


def test_an_agents_tool_takes_the_user_from_the_runtime_context(hs: Hindsight, ns: str) -> None:
    call = {"name": "save_memory", "args": {"content": "Ana's cat is called Miso."}, "id": "c1"}
    model = RecordingToolModel(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("Saved.")]))
    agent = create_agent(model, tools=memory_tools(ns + ":{user_id}", engine=hs), context_schema=Ctx)
    agent.invoke({"messages": [{"role": "user", "content": "Remember my cat is Miso."}]}, context=Ctx("ana"))
    assert [m.content for m in hs.find(f"{ns}:ana")] == ["Ana's cat is called Miso."]


def test_middleware_recall_is_a_retriever_run(hs: Hindsight, ns: str) -> None:
    hs.record("I prefer answers in French.", f"{ns}:ana")
    model = RecordingToolModel(messages=iter([AIMessage("Bonjour !")]))
    agent = create_agent(
        model, tools=[], middleware=[HindsightMemoryMiddleware(hs, namespace_prefix=ns + ":")], context_schema=Ctx
    )
    runs = RetrieverRuns()
    question = {"messages": [{"role": "user", "content": "Which language do I prefer for answers?"}]}
    agent.invoke(question, config={"callbacks": [runs]}, context=Ctx("ana"))
    assert runs.queries == ["Which language do I prefer for answers?"] and runs.names == ["hindsight_recall"]
    docs = runs.documents[0]
    assert docs[0].page_content == "I prefer answers in French." and docs[0].metadata["score"] > 0


def test_classic_memory_recall_is_traced(hs: Hindsight, ns: str) -> None:
    hs.record("I work as a nurse in Lyon.", ns, session_id="earlier")
    memory = HindsightMemory(namespace=ns, engine=hs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = ConversationChain(llm=RecordingListModel(responses=["In Lyon."]), memory=memory)
    with collect_runs() as collected:
        chain.invoke({"input": "Where do I work as a nurse?"})
    recalls = [r for r in collected.traced_runs if r.run_type == "retriever"]
    assert [r.inputs["query"] for r in recalls] == ["Where do I work as a nurse?"]
    documents = recalls[0].outputs["documents"]
    assert documents[0].page_content == "I work as a nurse in Lyon."
    assert documents[0].metadata["memory_id"] and isinstance(documents[0].metadata["score"], float)


class ToolAndRetrieverRuns(RetrieverRuns):
    """Also keeps which run each retriever run hangs under, and the tool runs."""

    def __init__(self) -> None:
        super().__init__()
        self.retriever_parents: list[UUID | None] = []
        self.tools: dict[UUID, str] = {}

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kw: Any) -> None:
        super().on_retriever_start(serialized, query, run_id=run_id, **kw)
        self.retriever_parents.append(kw.get("parent_run_id"))

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, **kw: Any) -> None:
        self.tools[run_id] = str(kw.get("name") or (serialized or {}).get("name"))


def test_the_recall_tools_recall_is_a_retriever_run_under_the_tool_run(hs: Hindsight, ns: str) -> None:
    hs.record("Ana's cat is called Miso.", f"{ns}:ana")
    call = {"name": "recall_memory", "args": {"query": "What is my cat called?"}, "id": "c1"}
    model = RecordingToolModel(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("Miso.")]))
    agent = create_agent(model, tools=memory_tools(ns + ":{user_id}", engine=hs), context_schema=Ctx)
    runs = ToolAndRetrieverRuns()
    agent.invoke({"messages": [{"role": "user", "content": "What is my cat called?"}]},
                 config={"callbacks": [runs]}, context=Ctx("ana"))
    assert runs.queries == ["What is my cat called?"] and runs.names == ["hindsight_recall"]
    assert [runs.tools.get(parent) for parent in runs.retriever_parents] == ["recall_memory"]  # a child of the tool
    docs = runs.documents[0]
    assert docs[0].page_content == "Ana's cat is called Miso." and docs[0].metadata["score"] > 0
    assert "Ana's cat is called Miso." in str(model.prompts[1][-1].content)  # the tool's reply reached the model


async def test_the_recall_tools_async_recall_is_a_retriever_run_under_the_tool_run(hs: Hindsight, ns: str) -> None:
    hs.record("Ana's cat is called Miso.", f"{ns}:ana")
    recall, *_ = memory_tools(ns + ":{user_id}", engine=hs)
    runs = ToolAndRetrieverRuns()
    said = await recall.ainvoke({"query": "What is my cat called?"},
                                config={"callbacks": [runs], "configurable": {"user_id": "ana"}})
    assert "Ana's cat is called Miso." in said
    assert runs.names == ["hindsight_recall"] and runs.documents[0][0].page_content == "Ana's cat is called Miso."
    assert [runs.tools.get(parent) for parent in runs.retriever_parents] == ["recall_memory"]
    assert "callbacks" not in recall.args  # the tool's run manager is injected, not asked of the model
