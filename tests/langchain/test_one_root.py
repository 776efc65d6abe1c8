"""One user, one memory: a real ``create_agent`` with the middleware, a ``HindsightStore`` that files
items under the user's root (``user_label``), the save tool and a LangGraph-store tool. Everything the
user taught in one thread — store items, tool-saved facts, turns — is recalled in a later thread;
another user (even one whose id starts with the same letters) sees none of it; ``forget_namespace`` of
the root erases all of it; tool calls and tool results are never injected."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_classic.chains import ConversationChain
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langgraph.checkpoint.memory import InMemorySaver

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import (
    HindsightMemory,
    HindsightMemoryMiddleware,
    HindsightRetriever,
    HindsightStore,
    retain_tool,
    with_memory,
)
from hindsight_langchain.tools import recall_tool

from .conftest import RecordingListModel, RecordingToolModel

SISTER = "My sister Mei lives in Chengdu and teaches piano."
DIET = "Ana follows a strict vegan diet, no eggs or dairy."


@dataclass
class Ctx:
    user_id: str


@tool
def remember_item(text: str, runtime: ToolRuntime) -> str:
    """Keep a note in the LangGraph store (what LangMem's manage_memory tool does)."""
    assert runtime.store is not None
    runtime.store.put(("memories", runtime.context.user_id), "sister", {"text": text})
    return "stored"


def _agent(hs: Hindsight, store: HindsightStore, prefix: str, replies: list[AIMessage]) -> tuple[Any, Any]:
    model = RecordingToolModel(messages=iter(replies))
    agent = create_agent(
        model,
        tools=[remember_item, retain_tool(f"{prefix}{{user_id}}", engine=hs)],
        system_prompt="You are a concise assistant.",
        middleware=[HindsightMemoryMiddleware(hs, namespace_prefix=prefix)],
        context_schema=Ctx,
        checkpointer=InMemorySaver(),
        store=store,
    )
    return agent, model


def _system(model: Any, call: int = 0) -> str:
    first = model.prompts[call][0]
    assert isinstance(first, SystemMessage)
    return str(first.content)


def _teach(hs: Hindsight, store: HindsightStore, prefix: str, user: str) -> None:
    agent, _ = _agent(
        hs,
        store,
        prefix,
        [
            AIMessage("", tool_calls=[
                {"name": "save_memory", "args": {"content": DIET, "importance": 4}, "id": "c1"},
                {"name": "remember_item", "args": {"text": SISTER}, "id": "c2"},
            ]),
            AIMessage("Noted both."),
        ],
    )
    agent.invoke(
        {"messages": [{"role": "user", "content": "Two things to keep in mind about me, please."}]},
        config={"configurable": {"thread_id": f"{user}-1"}},
        context=Ctx(user),
    )


def test_store_items_and_saved_facts_are_recalled_under_the_users_root(hs: Hindsight, ns: str) -> None:
    prefix = f"{ns}:"
    store = HindsightStore(hs, user_label=1, user_prefix=prefix)
    _teach(hs, store, prefix, "ana")
    root = f"{prefix}ana"
    assert store.engine_namespace(("memories", "ana")) == f"{root}/store:memories"
    assert store.get(("memories", "ana"), "sister").value == {"text": SISTER}  # type: ignore[union-attr]
    assert hs.store.namespaces_under(root) == [root, f"{root}/store:memories"]
    assert store.list_namespaces() == [("memories", "ana")]

    agent, model = _agent(hs, store, prefix, [AIMessage("Tofu stir-fry."), AIMessage("Chengdu.")])
    config: Any = {"configurable": {"thread_id": "ana-2"}}
    agent.invoke({"messages": [{"role": "user", "content": "Can I eat eggs or dairy tonight?"}]},
                 config=config, context=Ctx("ana"))
    diet = _system(model)
    assert DIET in diet  # the save tool's fact, recalled through the root
    agent.invoke({"messages": [{"role": "user", "content": "Where does my sister live?"}]},
                 config=config, context=Ctx("ana"))
    sister = _system(model, 1)
    assert SISTER in sister  # the store item, in the root's subtree
    for injected in (diet, sister):  # tool traffic is kept for replay, never injected
        assert "save_memory" not in injected and "remember_item" not in injected
        assert "Saved memory" not in injected and "stored" not in injected

    # the retriever and the recall tool search the same subtree
    docs = HindsightRetriever(namespace=root, engine=hs).invoke("Where does my sister live?")
    assert SISTER in [d.page_content for d in docs]
    recall = recall_tool(f"{prefix}{{user_id}}", engine=hs)
    assert SISTER in recall.invoke({"query": "Where does my sister live?"}, config={"configurable": {"user_id": "ana"}})

    # a user whose id starts with "ana" is behind the wall
    other, other_model = _agent(hs, store, prefix, [AIMessage("No idea.")])
    other.invoke({"messages": [{"role": "user", "content": "Where does my sister live? Can I eat dairy?"}]},
                 config={"configurable": {"thread_id": "anabel-1"}}, context=Ctx("anabel"))
    assert _system(other_model) == "You are a concise assistant."


def test_forget_the_root_erases_turns_items_facts_and_logs(hs: Hindsight, ns: str) -> None:
    prefix = f"{ns}:"
    store = HindsightStore(hs, user_label=1, user_prefix=prefix)
    for user in ("ana", "anabel"):
        _teach(hs, store, prefix, user)
    root = f"{prefix}ana"
    hs.edit_transcript(root, "chat-1", lambda _: [{"message": {"type": "human"}, "memory_id": None}])
    assert len(hs.find(root)) >= 3  # the turns and the saved fact

    erased = hs.forget_namespace(root)
    assert erased >= 4
    assert hs.store.namespaces_under(root) == []
    assert store.get(("memories", "ana"), "sister") is None
    assert hs.transcript(root, "chat-1") is None
    assert hs.recall("Where does my sister live?", root, subtree=True).hits == []
    # the neighbour kept everything
    assert store.get(("memories", "anabel"), "sister") is not None
    assert DIET in hs.recall("Can I eat dairy?", f"{prefix}anabel", subtree=True).to_prompt()


def test_items_written_before_user_roots_stay_readable_and_migrate(hs: Hindsight, ns: str) -> None:
    label = ns.replace(":", "-")
    old = HindsightStore(hs)  # the former layout: store:<labels>
    old.put((label, "ana"), "a", {"text": "old note a"})
    old.put((label, "ana"), "b", {"text": "old note b"})
    assert hs.find(f"store:{label}/ana")
    new = HindsightStore(hs, user_label=1, user_prefix=f"{ns}:")
    assert new.get((label, "ana"), "a").value == {"text": "old note a"}  # type: ignore[union-attr]
    assert {i.key for i in new.search((label,))} == {"a", "b"}

    new.put((label, "ana"), "a", {"text": "new note a"})  # a put moves the key under the root
    assert [m.metadata["lg_item"]["key"] for m in hs.find(f"store:{label}/ana")] == ["b"]
    assert new.get((label, "ana"), "a").value == {"text": "new note a"}  # type: ignore[union-attr]

    assert new.migrate_to_user_roots() == 1
    assert f"store:{label}/ana" not in hs.namespaces()
    assert {i.key: i.value["text"] for i in new.search((label, "ana"))} == {"a": "new note a", "b": "old note b"}
    assert new.migrate_to_user_roots() == 0


def test_a_user_id_with_the_separator_is_refused(hs: Hindsight, ns: str) -> None:
    """``ana/store:memories`` as a user id would read and write inside user ana's root."""
    model = RecordingToolModel(messages=iter([AIMessage("hi")]))
    agent = create_agent(model, middleware=[HindsightMemoryMiddleware(hs, namespace_prefix=f"{ns}:")],
                         context_schema=Ctx)
    with pytest.raises(InvalidInputError, match="contains '/'"):
        agent.invoke({"messages": [{"role": "user", "content": "hello"}]}, context=Ctx("ana/store:memories"))
    assert model.prompts == []
    save = retain_tool(f"{ns}:{{user_id}}", engine=hs)
    with pytest.raises(InvalidInputError, match="contains '/'"):
        save.invoke({"content": "x"}, config={"configurable": {"user_id": "ana/x"}})
    store = HindsightStore(hs, user_label=1, user_prefix=f"{ns}:")
    with pytest.raises(InvalidInputError, match="contains '/'"):
        store.put(("memories", "ana/x"), "k", {"text": "x"})
    assert hs.store.namespaces_under(f"{ns}:ana") == []


# -- a fact in a child of the user's root reaches every adapter configured for the root ------------------

NEIGHBOUR = "Anabel is allergic to eggs and avoids all dairy."
QUESTION = "Can I eat eggs or dairy tonight?"


def _children(hs: Hindsight, ns: str) -> tuple[str, str]:
    """Ana's fact in a child of her root, the neighbour's in a child of his; the two roots."""
    ana, anabel = f"{ns}:ana", f"{ns}:anabel"
    hs.record(DIET, namespace=f"{ana}/store:memories")
    hs.record(NEIGHBOUR, namespace=f"{anabel}/store:memories")
    return ana, anabel


def _conversation_prompt(hs: Hindsight, namespace: str) -> str:
    model = RecordingListModel(responses=["Sure."])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = ConversationChain(llm=model, memory=HindsightMemory(namespace=namespace, engine=hs))
    chain.invoke({"input": QUESTION})
    return str(model.prompts[0][0].content)


def test_classic_memory_recalls_the_roots_children(hs: Hindsight, ns: str) -> None:
    ana, anabel = _children(hs, ns)
    prompt = _conversation_prompt(hs, ana)
    assert DIET in prompt and NEIGHBOUR not in prompt
    prompt = _conversation_prompt(hs, anabel)
    assert NEIGHBOUR in prompt and DIET not in prompt


def test_with_memory_recalls_the_roots_children(hs: Hindsight, ns: str) -> None:
    _children(hs, ns)
    model = RecordingListModel(responses=["Sure.", "Sure."])
    prompt = ChatPromptTemplate.from_messages([("system", "Be brief.\n{memory}"), ("human", "{input}")])
    chain = with_memory(prompt | model, namespace=ns + ":{user_id}", engine=hs)
    for user in ("ana", "anabel"):
        chain.invoke({"input": QUESTION}, config={"configurable": {"user_id": user, "session_id": f"{user}-s"}})
    ana, anabel = (str(p[0].content) for p in model.prompts)
    assert DIET in ana and NEIGHBOUR not in ana
    assert NEIGHBOUR in anabel and DIET not in anabel


async def test_the_async_paths_recall_the_roots_children(hs: Hindsight, ns: str) -> None:
    ana, anabel = _children(hs, ns)
    memory = HindsightMemory(namespace=ana, engine=hs, return_messages=True)
    variables = await memory.aload_memory_variables({"input": QUESTION})
    assert DIET in str(variables["history"][0].content)
    docs = await HindsightRetriever(namespace=anabel, engine=hs).ainvoke(QUESTION)
    assert [d.page_content for d in docs] == [NEIGHBOUR]
    recall = recall_tool(f"{ns}:{{user_id}}", engine=hs)
    said = await recall.ainvoke({"query": QUESTION}, config={"configurable": {"user_id": "ana"}})
    assert DIET in said and NEIGHBOUR not in said
