"""Shared layers through the LangChain adapters (issue 32): every adapter that recalls takes ``shared=``
(default ``True``, as ``Hindsight.recall``); with a grant, what it injects holds the shared fact and
says where it came from, with ``shared=False`` or without a grant it does not. The forget tool never
reaches a shared memory, and a LangGraph store search never reads a shared layer."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import (
    HindsightMemory,
    HindsightMemoryMiddleware,
    HindsightRetriever,
    HindsightStore,
    memory_tools,
    recall_tool,
    with_memory,
)
from hindsight_langchain.middleware import RECALL_KEY
from tests.shared_trip import QUESTION, VISA, World, plan_trip

from .conftest import RecordingListModel, RecordingToolModel


@pytest.fixture
def world(hs: Hindsight) -> World:
    return plan_trip(hs)


# -- what each recalling entry point puts in front of the model, for one user -------------------------


def _memory(hs: Hindsight, user: str, **shared: bool) -> str:
    memory = HindsightMemory(namespace=f"user:{user}", engine=hs, context_key="hindsight_context", **shared)
    return str(memory.load_memory_variables({"input": QUESTION})["hindsight_context"])


def _with_memory(hs: Hindsight, user: str, **shared: bool) -> str:
    model = RecordingListModel(responses=["Noted."])
    prompt = ChatPromptTemplate.from_messages([("system", "Be brief.\n{memory}"), ("human", "{input}")])
    chain = with_memory(prompt | model, engine=hs, record=False, **shared)
    chain.invoke({"input": QUESTION}, config={"configurable": {"user_id": user}})
    return str(model.prompts[0][0].content)


@dataclass
class Ctx:
    user_id: str


def _middleware(hs: Hindsight, user: str, **shared: bool) -> str:
    model = RecordingToolModel(messages=iter([AIMessage("Noted.")]))
    middleware = HindsightMemoryMiddleware(hs, record=False, **shared)
    agent = create_agent(model, tools=[], system_prompt="Be brief.", middleware=[middleware], context_schema=Ctx)
    state = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}, context=Ctx(user))
    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage)
    # the agent state says which memory came from where, as the prompt line does
    sources = {m["content"]: m["shared_from"] for m in state[RECALL_KEY]["memories"]}
    assert all(source is None for content, source in sources.items() if content != VISA)
    return str(system.content) + (f"\nstate: {VISA} from {sources[VISA]}" if VISA in sources else "")


def _tool(hs: Hindsight, user: str, **shared: bool) -> str:
    return str(recall_tool("user:{user_id}", engine=hs, **shared).invoke(
        {"query": QUESTION}, config={"configurable": {"user_id": user}}))


INJECTING: list[Callable[..., str]] = [_memory, _with_memory, _middleware, _tool]


@pytest.mark.parametrize("inject", INJECTING, ids=lambda f: f.__name__.strip("_"))
def test_a_granted_shared_fact_is_injected_and_says_where_it_came_from(
        hs: Hindsight, world: World, inject: Callable[..., str]) -> None:
    assert VISA not in inject(hs, world.user)  # no grant, no read
    hs.grant(world.kb, to=world.ns)
    shown = inject(hs, world.user)
    assert world.line in shown, shown
    if inject is _middleware:
        assert f"state: {VISA} from {world.kb}" in shown
    assert "Switzerland" not in shown  # the shared layer passes the floor like the user's own memories
    assert VISA not in inject(hs, world.user, shared=False)
    assert VISA in inject(hs, world.user, shared=True)
    hs.revoke(world.kb, to=world.ns)
    assert VISA not in inject(hs, world.user)


@pytest.mark.parametrize("inject", INJECTING, ids=lambda f: f.__name__.strip("_"))
def test_a_grant_reaches_only_its_grantee(hs: Hindsight, world: World, inject: Callable[..., str]) -> None:
    hs.grant(world.kb, to=world.ns)
    other = world.user + "x"  # shares the grantee's characters, not its name
    hs.record("I'm planning a trip to Japan in April with my sister.", f"user:{other}", role="user")
    assert VISA not in inject(hs, other)


async def test_retriever_documents_name_the_shared_namespace(hs: Hindsight, world: World) -> None:
    retriever = HindsightRetriever(namespace=world.ns, engine=hs)
    assert all(d.page_content != VISA for d in retriever.invoke(QUESTION))
    hs.grant(world.kb, to=world.ns)
    for docs in (retriever.invoke(QUESTION), await retriever.ainvoke(QUESTION)):
        meta = {d.page_content: d.metadata for d in docs}
        assert (meta[VISA]["namespace"], meta[VISA]["shared_from"], meta[VISA]["memory_id"]) == (
            world.kb, world.kb, world.visa)
        own = [m for content, m in meta.items() if content != VISA]
        assert own and all(m["shared_from"] is None and m["namespace"] == world.ns for m in own)
    alone = HindsightRetriever(namespace=world.ns, engine=hs, shared=False)
    assert all(d.page_content != VISA for d in alone.invoke(QUESTION))
    assert all(d.page_content != VISA for d in await alone.ainvoke(QUESTION))


def test_a_child_namespace_reads_through_its_roots_grant_and_its_own_memories_stay_its_own(
        hs: Hindsight, world: World) -> None:
    hs.grant(world.kb, to=world.ns)
    child = f"{world.ns}/notes"
    hs.record("The Japan trip in April is two weeks long.", child, layer="semantic", kind="fact")
    docs = HindsightRetriever(namespace=world.ns, engine=hs).invoke(QUESTION)
    sources = {d.page_content: d.metadata["shared_from"] for d in docs}
    assert sources[VISA] == world.kb
    assert sources["The Japan trip in April is two weeks long."] is None  # in the user's subtree: not shared


async def test_the_forget_tool_cannot_demote_or_erase_a_shared_memory(hs: Hindsight, world: World) -> None:
    hs.grant(world.kb, to=world.ns)
    recall, _, forget = memory_tools(world.ns, engine=hs)
    reply = recall.invoke({"query": QUESTION})
    assert f"{world.line} (read-only)" in reply and f"(id: {world.visa})" not in reply  # no id to name
    own = hs.recall(QUESTION, world.ns, track=False, shared=False).hits[0].memory
    assert f"(id: {own.id})" in reply
    before = hs.get(world.visa)
    *_, templated = memory_tools("user:{user_id}", engine=hs)
    config = {"configurable": {"user_id": world.user}}
    for erase in (False, True):  # an id learned elsewhere (the retriever's metadata) reaches nothing
        assert forget.invoke({"memory_id": world.visa, "erase": erase}) == f"No memory {world.visa!r} found."
        said = await templated.ainvoke({"memory_id": world.visa, "erase": erase}, config=config)
        assert said == f"No memory {world.visa!r} found."
    assert hs.get(world.visa) == before and hs.history(world.visa).demotions == []
    assert world.line in recall.invoke({"query": QUESTION})  # still shared, unchanged
    # the tool still forgets the user's own memory
    assert forget.invoke({"memory_id": own.id}).startswith(f"Demoted memory {own.id}")


def test_a_store_search_never_reads_a_shared_layer(
        hs: Hindsight, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    store = HindsightStore(hs, root=f"s{uuid.uuid4().hex[:8]}", user_label=1)
    space = ("memories", world.user)
    store.put(space, "trip", {"text": "Ana's Japan trip is two weeks in April."})
    store.put(space, "passport", {"text": "Ana's passport expires in 2030."})
    before = [(i.key, i.score) for i in store.search(("memories",), query=QUESTION)]
    hs.grant(world.kb, to=world.ns)  # the store's items live under the user's root, which holds the grant
    calls: list[dict[str, Any]] = []
    recall = hs.recall

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return recall(*args, **kwargs)

    monkeypatch.setattr(hs, "recall", spy)
    after = store.search(("memories",), query=QUESTION)
    assert [(i.key, i.score) for i in after] == before
    assert {i.namespace for i in after} == {space} and all(VISA not in str(i.value) for i in after)
    assert calls and all(call.get("shared") is False for call in calls)  # no shared hit takes an item's place
    # the same user's recalling adapters do read the grant
    assert any(d.metadata["shared_from"] == world.kb
               for d in HindsightRetriever(namespace=world.ns, engine=hs).invoke(QUESTION))


def test_shared_must_be_a_bool(hs: Hindsight, world: World) -> None:
    builds: list[Callable[[], object]] = [
        lambda: HindsightMemory(namespace=world.ns, engine=hs, shared="no"),
        lambda: HindsightRetriever(namespace=world.ns, engine=hs, shared="no"),
        lambda: with_memory(RecordingListModel(responses=["x"]), engine=hs, shared="no"),
        lambda: HindsightMemoryMiddleware(hs, shared="no"),  # type: ignore[arg-type]
        lambda: recall_tool(world.ns, engine=hs, shared="no"),  # type: ignore[arg-type]
        lambda: memory_tools(world.ns, engine=hs, shared=1),  # type: ignore[arg-type]
    ]
    for build in builds:
        with pytest.raises(InvalidInputError, match="shared must be a bool"):
            build()


def test_a_hit_rendered_again_from_its_memory_still_says_where_it_came_from(hs: Hindsight, world: World) -> None:
    """A hit built by hand (no text recall rendered) is rendered from its memory, by the same rule."""
    from hindsight_core.integration import render_lines

    hs.grant(world.kb, to=world.ns)
    result = hs.recall(QUESTION, world.ns, track=False)
    bare = result.model_copy(update={"hits": [h.model_copy(update={"text": ""}) for h in result.hits]})
    assert render_lines(bare) == render_lines(result) and bare.to_prompt() == result.to_prompt()
    assert sum("shared from" in line for line in render_lines(bare)) == 1
    assert world.line in bare.to_prompt()
