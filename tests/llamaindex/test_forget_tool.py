"""The ``forget_memory`` tool through LlamaIndex's ``FunctionTool``: recall shows the ids it takes, a call
demotes (the memory drops in recall, reversibly) or with ``erase=True`` erases, and an id of another
namespace is "not found" and left alone."""

from __future__ import annotations

import uuid

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from hindsight_core import Hindsight
from hindsight_llamaindex import memory_tools

QUESTION = "what food do I like?"


def _ns() -> str:
    return f"user:{uuid.uuid4().hex[:12]}"


def _ids_in_order(text: str, *ids: str) -> list[str]:
    return sorted((i for i in ids if f"(id: {i})" in text), key=text.index)


async def test_forget_memory_demotes_then_erases(shared_hs: Hindsight) -> None:
    ns = _ns()
    recall, _, forget = memory_tools(ns, engine=shared_hs)
    assert isinstance(forget, FunctionTool) and forget.metadata.name == "forget_memory"
    assert set(forget.metadata.get_parameters_dict()["properties"]) == {"memory_id", "erase"}
    favourite = shared_hs.record("My favourite food is sushi.", ns).id
    also = shared_hs.record("I really love eating sushi for dinner.", ns).id
    assert _ids_in_order(str(recall.call(query=QUESTION)), favourite, also) == [favourite, also]

    reply = str(forget.call(memory_id=favourite))
    assert reply == f"Demoted memory {favourite}: it now ranks low and fades; it can be reinstated."
    assert _ids_in_order(str(recall.call(query=QUESTION)), favourite, also) == [also, favourite]
    assert [d.by for d in shared_hs.history(favourite).demotions] == ["tool:forget_memory"]

    assert str(await forget.acall(memory_id=favourite, erase=True)) == f"Erased memory {favourite}."
    assert shared_hs.get(favourite) is None
    assert _ids_in_order(str(recall.call(query=QUESTION)), favourite, also) == [also]


def test_forget_memory_never_reaches_another_namespace(shared_hs: Hindsight) -> None:
    ns = _ns()
    theirs = shared_hs.record("My favourite food is sushi.", ns)
    *_, stranger = memory_tools(_ns(), engine=shared_hs)
    for erase in (False, True):
        assert str(stranger.call(memory_id=theirs.id, erase=erase)) == f"No memory {theirs.id!r} found."
    assert shared_hs.get(theirs.id) == theirs and shared_hs.history(theirs.id).demotions == []


async def test_a_templated_forget_tool_acts_only_for_the_run_s_user(shared_hs: Hindsight) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    anas = shared_hs.record("My favourite food is sushi.", f"{prefix}ana")
    *_, forget = memory_tools(prefix + "{user_id}", engine=shared_hs)
    assert "ctx" not in forget.metadata.get_parameters_dict()["properties"]  # the LLM never fills the user
    ctx = Context(FunctionAgent(tools=[forget], llm=MockFunctionCallingLLMWithChatMemoryOfLastCall()))
    await ctx.store.set("user_id", "anabel")  # a user whose id starts alike
    for erase in (False, True):
        said = str(await forget.acall(ctx=ctx, memory_id=anas.id, erase=erase))
        assert said == f"No memory {anas.id!r} found."
    assert shared_hs.get(anas.id) == anas and shared_hs.history(anas.id).demotions == []
    await ctx.store.set("user_id", "ana")
    assert str(await forget.acall(ctx=ctx, memory_id=anas.id)).startswith(f"Demoted memory {anas.id}")
    assert shared_hs.history(anas.id).demoted
