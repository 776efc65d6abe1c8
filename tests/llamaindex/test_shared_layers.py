"""Shared layers through the LlamaIndex adapters (issue 32), with the LangChain adapters' parameter:
every adapter that recalls takes ``shared=`` (default ``True``, as ``Hindsight.recall``); with a grant,
what reaches the LLM holds the shared fact and says where it came from, with ``shared=False`` or without
a grant it does not. The forget tool never reaches a shared memory."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.memory import Memory
from llama_index.core.schema import MetadataMode
from llama_index.core.workflow import Context

from hindsight_core import Hindsight, InvalidInputError
from hindsight_llamaindex import (
    HindsightMemory,
    HindsightMemoryBlock,
    HindsightRetriever,
    memory_tools,
    recall_tool,
)
from tests.shared_trip import QUESTION, VISA, World, plan_trip


@pytest.fixture
def world(shared_hs: Hindsight) -> World:
    return plan_trip(shared_hs)


# -- what reaches the LLM through each recalling entry point, for one user -----------------------------


def _llm() -> MockFunctionCallingLLMWithChatMemoryOfLastCall:
    """A function-calling mock that keeps what it was sent and replies "Noted." (the default reply echoes
    the prompt, which ``HindsightMemory`` would record as the assistant's turn, memories and all)."""
    return MockFunctionCallingLLMWithChatMemoryOfLastCall(
        response_generator=lambda messages, **kwargs: ChatMessage(role=MessageRole.ASSISTANT, content="Noted."))


def _seen(llm: MockFunctionCallingLLMWithChatMemoryOfLastCall) -> str:
    return "\n".join(str(m.content) for m in llm.last_chat_messages or [])


async def _memory(hs: Hindsight, user: str, **shared: bool) -> str:
    llm = _llm()
    memory = HindsightMemory.from_defaults(namespace=f"user:{user}", session_id=uuid.uuid4().hex, engine=hs,
                                           **shared)
    await FunctionAgent(tools=[], llm=llm).run(user_msg=QUESTION, memory=memory)
    return _seen(llm)


async def _block(hs: Hindsight, user: str, **shared: bool) -> str:
    llm = _llm()
    block = HindsightMemoryBlock(namespace=f"user:{user}", engine=hs, **shared)
    memory = Memory.from_defaults(session_id=uuid.uuid4().hex, token_limit=4000, memory_blocks=[block])
    await FunctionAgent(tools=[], llm=llm).run(user_msg=QUESTION, memory=memory)
    return _seen(llm)


async def _tool(hs: Hindsight, user: str, **shared: bool) -> str:
    return str(recall_tool(f"user:{user}", engine=hs, **shared).call(query=QUESTION))


async def _templated_tool(hs: Hindsight, user: str, **shared: bool) -> str:
    tool = recall_tool("user:{user_id}", engine=hs, **shared)
    ctx = Context(FunctionAgent(tools=[tool], llm=MockFunctionCallingLLMWithChatMemoryOfLastCall()))
    await ctx.store.set("user_id", user)
    return str(await tool.acall(ctx=ctx, query=QUESTION))


async def _retriever(hs: Hindsight, user: str, **shared: bool) -> str:
    """What a query engine hands its LLM: each node's content with the metadata shown to the LLM."""
    nodes = await HindsightRetriever(f"user:{user}", engine=hs, **shared).aretrieve(QUESTION)
    return NODES.join(n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes)


NODES = "\n---\n"
INJECTING: list[Callable[..., Awaitable[str]]] = [_memory, _block, _tool, _templated_tool, _retriever]


def _says_where(inject: Callable[..., Awaitable[str]], world: World, shown: str) -> bool:
    """Whether the visa fact reached the LLM saying which namespace shared it: on its prompt line, or
    (a retriever's node) in the metadata the LLM reads with it."""
    if inject is _retriever:
        return any(f"shared_from: {world.kb}\n" in node and VISA in node for node in shown.split(NODES))
    return world.line in shown


@pytest.mark.parametrize("inject", INJECTING, ids=lambda f: f.__name__.strip("_"))
async def test_a_granted_shared_fact_reaches_the_llm_and_says_where_it_came_from(
        shared_hs: Hindsight, world: World, inject: Callable[..., Awaitable[str]]) -> None:
    assert VISA not in await inject(shared_hs, world.user)  # no grant, no read
    shared_hs.grant(world.kb, to=world.ns)
    shown = await inject(shared_hs, world.user)
    assert _says_where(inject, world, shown), shown
    assert "Switzerland" not in shown  # the shared layer passes the floor like the user's own memories
    assert VISA not in await inject(shared_hs, world.user, shared=False)
    assert VISA in await inject(shared_hs, world.user, shared=True)
    shared_hs.revoke(world.kb, to=world.ns)
    assert VISA not in await inject(shared_hs, world.user)


@pytest.mark.parametrize("inject", INJECTING, ids=lambda f: f.__name__.strip("_"))
async def test_a_grant_reaches_only_its_grantee(
        shared_hs: Hindsight, world: World, inject: Callable[..., Awaitable[str]]) -> None:
    shared_hs.grant(world.kb, to=world.ns)
    other = world.user + "x"  # shares the grantee's characters, not its name
    shared_hs.record("I'm planning a trip to Japan in April with my sister.", f"user:{other}", role="user")
    assert VISA not in await inject(shared_hs, other)


def test_retriever_nodes_name_the_shared_namespace(shared_hs: Hindsight, world: World) -> None:
    shared_hs.grant(world.kb, to=world.ns)
    nodes = HindsightRetriever(world.ns, engine=shared_hs).retrieve(QUESTION)
    meta = {n.node.get_content(): n.node.metadata for n in nodes}
    assert (meta[VISA]["namespace"], meta[VISA]["shared_from"], meta[VISA]["memory_id"]) == (
        world.kb, world.kb, world.visa)
    own = [n for n in nodes if n.node.get_content() != VISA]
    assert own and all(n.node.metadata["shared_from"] is None for n in own)
    # an own memory's node says nothing of sharing to the LLM ("shared_from: None" would be noise)
    assert all("shared_from" not in n.node.get_content(metadata_mode=MetadataMode.LLM) for n in own)


async def test_the_forget_tool_cannot_demote_or_erase_a_shared_memory(shared_hs: Hindsight, world: World) -> None:
    shared_hs.grant(world.kb, to=world.ns)
    recall, _, forget = memory_tools(world.ns, engine=shared_hs)
    reply = str(recall.call(query=QUESTION))
    assert f"{world.line} (read-only)" in reply and f"(id: {world.visa})" not in reply  # no id to name
    own = shared_hs.recall(QUESTION, world.ns, track=False, shared=False).hits[0].memory
    assert f"(id: {own.id})" in reply
    before = shared_hs.get(world.visa)
    *_, templated = memory_tools("user:{user_id}", engine=shared_hs)
    ctx = Context(FunctionAgent(tools=[templated], llm=MockFunctionCallingLLMWithChatMemoryOfLastCall()))
    await ctx.store.set("user_id", world.user)
    for erase in (False, True):  # an id learned elsewhere (the retriever's metadata) reaches nothing
        assert str(forget.call(memory_id=world.visa, erase=erase)) == f"No memory {world.visa!r} found."
        said = str(await templated.acall(ctx=ctx, memory_id=world.visa, erase=erase))
        assert said == f"No memory {world.visa!r} found."
    assert shared_hs.get(world.visa) == before and shared_hs.history(world.visa).demotions == []
    assert world.line in str(recall.call(query=QUESTION))  # still shared, unchanged
    # the tool still forgets the user's own memory
    assert str(forget.call(memory_id=own.id)).startswith(f"Demoted memory {own.id}")


def test_shared_must_be_a_bool(shared_hs: Hindsight, world: World) -> None:
    builds: list[Callable[[], object]] = [
        lambda: HindsightMemory.from_defaults(namespace=world.ns, engine=shared_hs, shared="no"),
        lambda: HindsightMemoryBlock(namespace=world.ns, engine=shared_hs, shared="no"),
        lambda: HindsightRetriever(world.ns, engine=shared_hs, shared="no"),  # type: ignore[arg-type]
        lambda: recall_tool(world.ns, engine=shared_hs, shared="no"),  # type: ignore[arg-type]
        lambda: memory_tools(world.ns, engine=shared_hs, shared=1),  # type: ignore[arg-type]
    ]
    for build in builds:
        with pytest.raises(InvalidInputError, match="shared must be a bool"):
            build()

