"""One user, one memory, in LlamaIndex: a fact filed in a child of the user's root (``user:ana/store:memories``,
where a LangGraph store or another tool may have put it) reaches every adapter configured for the root —
``HindsightMemory`` in a ``FunctionAgent``, a ``HindsightMemoryBlock`` in ``Memory``, the recall tool
(fixed and templated) and the retriever — and never a neighbour whose id starts alike (``anabel``), nor
the neighbour's children the other way round. The LLM is an upstream mock that keeps what it was sent."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.memory import Memory

from hindsight_core import Hindsight
from hindsight_core.integration import RECALL_TOOL_NAME
from hindsight_llamaindex import HindsightMemory, HindsightMemoryBlock, HindsightRetriever, memory_tools

DIET = "Ana follows a strict vegan diet, no eggs or dairy."
NEIGHBOUR = "Anabel is allergic to eggs and avoids all dairy."
QUESTION = "Can I eat eggs or dairy tonight?"


def _roots(hs: Hindsight) -> tuple[str, str, str]:
    """Ana's fact in a child of her root, the neighbour's in a child of his: (prefix, ana, anabel)."""
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    ana, anabel = f"{prefix}ana", f"{prefix}anabel"
    hs.record(DIET, namespace=f"{ana}/store:memories")
    hs.record(NEIGHBOUR, namespace=f"{anabel}/notes")
    return prefix, ana, anabel


def _sees(text: str, own: str, other: str) -> bool:
    return own in text and other not in text


async def test_agent_memory_recalls_the_roots_children(shared_hs: Hindsight) -> None:
    _, ana, anabel = _roots(shared_hs)
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent = FunctionAgent(tools=[], llm=llm, system_prompt="You are a cook.")
    for root, own, other in ((ana, DIET, NEIGHBOUR), (anabel, NEIGHBOUR, DIET)):
        memory = HindsightMemory.from_defaults(namespace=root, session_id="tonight", engine=shared_hs)
        await agent.run(user_msg=QUESTION, memory=memory)
        system = "\n".join(str(m.content) for m in llm.last_chat_messages or [] if m.role == MessageRole.SYSTEM)
        assert _sees(system, own, other)
        assert memory.last_recall is not None and memory.last_recall.hits[0].memory.namespace.startswith(root + "/")


async def test_memory_block_recalls_the_roots_children(shared_hs: Hindsight) -> None:
    _, ana, anabel = _roots(shared_hs)
    for root, own, other in ((ana, DIET, NEIGHBOUR), (anabel, NEIGHBOUR, DIET)):
        block = HindsightMemoryBlock(namespace=root, engine=shared_hs)
        memory = Memory.from_defaults(session_id="now", token_limit=4000, memory_blocks=[block])
        await memory.aput(ChatMessage(role="user", content=QUESTION))
        system = "\n".join(str(m.content) for m in await memory.aget() if m.role == MessageRole.SYSTEM)
        assert "<hindsight_memory>" in system and _sees(system, own, other)


def _asks_recall(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The LLM calls the recall tool once, then answers with what it returned."""
    if messages and messages[-1].role == MessageRole.TOOL:
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Tool said: {messages[-1].content}")
    call = ToolCallBlock(tool_call_id=f"c-{uuid.uuid4().hex[:6]}", tool_name=RECALL_TOOL_NAME,
                         tool_kwargs={"query": QUESTION})
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])


async def test_recall_tools_search_the_roots_children(shared_hs: Hindsight) -> None:
    prefix, ana, anabel = _roots(shared_hs)
    for user, root, own, other in (("ana", ana, DIET, NEIGHBOUR), ("anabel", anabel, NEIGHBOUR, DIET)):
        fixed = memory_tools(root, engine=shared_hs)[0]
        assert _sees(str(fixed.call(query=QUESTION)), own, other)
        assert _sees(str(await fixed.acall(query=QUESTION)), own, other)
        llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=_asks_recall)
        agent = FunctionAgent(tools=memory_tools(prefix + "{user_id}", engine=shared_hs), llm=llm,
                              initial_state={"user_id": user})
        assert _sees(str(await agent.run(user_msg="What should I cook tonight?")), own, other)


async def test_retriever_searches_the_roots_children(shared_hs: Hindsight) -> None:
    _, ana, anabel = _roots(shared_hs)
    for root, own in ((ana, DIET), (anabel, NEIGHBOUR)):
        retriever = HindsightRetriever(root, engine=shared_hs)
        assert [n.node.get_content() for n in retriever.retrieve(QUESTION)] == [own]
        assert [n.node.get_content() for n in await retriever.aretrieve(QUESTION)] == [own]
    # the root alone holds nothing: the hits came from its child
    assert HindsightRetriever(ana, engine=shared_hs, subtree=False).retrieve(QUESTION) == []
