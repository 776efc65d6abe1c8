"""Templated LlamaIndex tools in a real ``FunctionAgent``: one agent, the namespace filled per run from the
workflow context (``initial_state`` or the context store), the same tool names as the LangChain adapter,
and a fact saved in one session recalled in a later one — by the recall tool and by ``HindsightMemory``
— for that user only."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.workflow import Context

from hindsight_core import Hindsight, InvalidInputError
from hindsight_core.integration import FORGET_TOOL_NAME, RECALL_TOOL_NAME, SAVE_TOOL_NAME
from hindsight_llamaindex import HindsightMemory, memory_tools

DIET = "Ana follows a strict vegan diet, no eggs or dairy."


def _script(tool: str, args: dict[str, Any]) -> Callable[..., ChatMessage]:
    """The LLM calls ``tool`` once, then answers with what the tool returned."""

    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if messages and messages[-1].role == MessageRole.TOOL:
            return ChatMessage(role=MessageRole.ASSISTANT, content=f"Tool said: {messages[-1].content}")
        call = ToolCallBlock(tool_call_id=f"c-{uuid.uuid4().hex[:6]}", tool_name=tool, tool_kwargs=args)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])

    return reply


def _agent(hs: Hindsight, template: str, tool: str, args: dict[str, Any], **kw: Any) -> FunctionAgent:
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=_script(tool, args))
    return FunctionAgent(tools=memory_tools(template, engine=hs), llm=llm, **kw)


def test_the_same_tool_names_in_both_frameworks(shared_hs: Hindsight) -> None:
    names = [t.metadata.name for t in memory_tools("user:{user_id}", engine=shared_hs)]
    assert names == [RECALL_TOOL_NAME, SAVE_TOOL_NAME, FORGET_TOOL_NAME]  # the LangChain tools' names too
    recall, save, _ = memory_tools("user:{user_id}", engine=shared_hs)
    assert "ctx" not in recall.metadata.get_parameters_dict()["properties"]  # the LLM never fills the user
    assert set(save.metadata.get_parameters_dict()["properties"]) == {"content", "importance"}


async def test_a_fact_saved_in_one_session_is_recalled_in_a_later_one_for_that_user_only(shared_hs: Hindsight) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    template = prefix + "{user_id}"
    saver = _agent(shared_hs, template, SAVE_TOOL_NAME, {"content": DIET, "importance": 4},
                   initial_state={"user_id": "ana"})
    answer = await saver.run(user_msg="Keep my diet in mind for later.")
    assert "Saved memory" in str(answer)
    saved = shared_hs.find(f"{prefix}ana")
    assert [m.content for m in saved] == [DIET] and saved[0].metadata["via"] == SAVE_TOOL_NAME

    # a later session: the recall tool, the user from the context store this time
    asker = _agent(shared_hs, template, RECALL_TOOL_NAME, {"query": "Can I eat eggs or dairy?"})
    ctx = Context(asker)
    await ctx.store.set("user_id", "ana")
    assert DIET in str(await asker.run(user_msg="What should I cook tonight?", ctx=ctx))

    # ... and the memory path: HindsightMemory on the user's root injects it without a tool call
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    plain = FunctionAgent(tools=[], llm=llm)
    memory = HindsightMemory.from_defaults(namespace=f"{prefix}ana", session_id="later", engine=shared_hs)
    await plain.run(user_msg="Can I eat eggs or dairy tonight?", memory=memory)
    system = [m for m in llm.last_chat_messages or [] if m.role == MessageRole.SYSTEM]
    assert any(DIET in str(m.content) for m in system)

    # another user, even one whose id starts alike, gets nothing of it
    other = _agent(shared_hs, template, RECALL_TOOL_NAME, {"query": "Can I eat eggs or dairy?"},
                   initial_state={"user_id": "anabel"})
    reply = str(await other.run(user_msg="What should I cook tonight?"))
    assert DIET not in reply and "No relevant memories." in reply


async def test_a_run_without_the_user_saves_nothing(shared_hs: Hindsight) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    recall, save, _ = memory_tools(prefix + "{user_id}", engine=shared_hs)
    agent = FunctionAgent(tools=[recall, save], llm=MockFunctionCallingLLMWithChatMemoryOfLastCall())
    ctx = Context(agent)
    with pytest.raises(InvalidInputError, match="user_id"):
        await save.acall(ctx=ctx, content=DIET)
    await ctx.store.set("user_id", "ana/x")  # a user id naming someone's child namespace
    with pytest.raises(InvalidInputError, match="contains '/'"):
        await save.acall(ctx=ctx, content=DIET)
    assert not [ns for ns in shared_hs.namespaces() if ns.startswith(prefix)]
    await ctx.store.set("user_id", "ana")
    assert "Saved memory" in str(save.call(ctx=ctx, content=DIET))  # the sync call runs the same path
    assert DIET in str(await recall.acall(ctx=ctx, query="Can I eat dairy?"))
