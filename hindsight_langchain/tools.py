"""Recall, save and forget as LangChain tools, for agents that decide themselves what to remember.

The namespace may be a template filled per call from the run (LangMem style): ``"user:{user_id}"`` or
``("memories", "{user_id}")`` takes ``user_id`` from the LangGraph runtime context
(``agent.invoke(..., context={"user_id": "ana"})``) or from ``config["configurable"]``, so one tool
serves every user and a call without the user fails instead of landing in someone else's memory. The
tool names (``recall_memory``, ``save_memory``, ``forget_memory``) are the same in the LlamaIndex adapter.
Recall shows each memory's id, which ``forget_memory`` takes to demote the memory (reversible) or,
with ``erase=True``, erase it; an id outside the tool's namespace subtree is "not found". ``shared``
(default ``True``, as ``Hindsight.recall``) lets recall search the shared layers granted to the namespace
or its root; a shared memory is shown read-only, without an id, and ``forget_memory`` never reaches it (a
grant lends memories to be read, not to be forgotten by the grantee)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hindsight_core.integration import require

require("langchain_core", "langchain")

from langchain_core.callbacks import BaseCallbackManager  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langchain_core.runnables.config import patch_config  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402

from hindsight_core.integration import (  # noqa: E402
    FORGET_TOOL_DESCRIPTION,
    FORGET_TOOL_NAME,
    NOTHING_FOUND,
    RECALL_TOOL_DESCRIPTION,
    RECALL_TOOL_NAME,
    SAVE_TOOL_DESCRIPTION,
    SAVE_TOOL_NAME,
    NamespaceScope,
    NamespaceTemplate,
    aforget_memory,
    check_shared,
    forget_memory,
    query_text,
    recall_reply,
    resolve_engine,
    saved_reply,
)
from hindsight_langchain._common import atraced_recall, run_values, traced_recall  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight

NOTHING = NOTHING_FOUND


class _Scope(NamespaceScope):
    """The namespace of a tool: fixed, or a template filled from each call's run."""

    def __call__(self, config: RunnableConfig | None) -> str:
        return self.fill(None if self.fixed is not None else run_values(config, self.fields))


def recall_tool(
    namespace: NamespaceTemplate,
    *,
    engine: Hindsight | None = None,
    k: int = 5,
    budget_tokens: int = 800,
    name: str = RECALL_TOOL_NAME,
    shared: bool = True,
) -> StructuredTool:
    """A tool returning what long-term memory holds about a query, as the text recall would inject with
    each memory's id (the recall is a retriever run under the tool's run in the agent's callbacks). It
    searches the namespace's subtree: ``"user:{user_id}"`` finds the user's turns, store items and saved
    facts alike, and, unless ``shared=False``, the shared layers granted to it (read-only lines)."""
    scope = _Scope(namespace, "recall_tool")
    hs = resolve_engine(engine)

    options: dict[str, Any] = {
        "k": k, "budget_tokens": budget_tokens, "subtree": True, "shared": check_shared(shared, who="recall_tool"),
    }

    def _traced(config: RunnableConfig, callbacks: BaseCallbackManager | None) -> RunnableConfig:
        # ``config`` is what the tool was called with, so a recall traced with it would sit beside the
        # tool run; ``callbacks`` is the tool run's child manager, which hangs the recall under it.
        return patch_config(config, callbacks=callbacks) if callbacks is not None else config

    def recall_memory(query: str, config: RunnableConfig, callbacks: BaseCallbackManager | None = None) -> str:
        result = traced_recall(hs, query_text(query), scope(config), _traced(config, callbacks), **options)
        return recall_reply(result)

    async def arecall_memory(query: str, config: RunnableConfig, callbacks: BaseCallbackManager | None = None) -> str:
        result = await atraced_recall(hs, query_text(query), scope(config), _traced(config, callbacks), **options)
        return recall_reply(result)

    return StructuredTool.from_function(
        func=recall_memory, coroutine=arecall_memory, name=name, description=RECALL_TOOL_DESCRIPTION
    )


def retain_tool(
    namespace: NamespaceTemplate,
    *,
    engine: Hindsight | None = None,
    session_id: str | None = None,
    name: str = SAVE_TOOL_NAME,
) -> StructuredTool:
    """A tool storing one thing worth remembering; consolidation later distils it with the rest."""
    scope = _Scope(namespace, "retain_tool")
    hs = resolve_engine(engine)

    def _args(importance: int) -> dict[str, Any]:
        return {
            "session_id": session_id,
            "role": "assistant",
            "kind": "event",
            "importance": importance,
            "metadata": {"via": name},
        }

    def save_memory(content: str, config: RunnableConfig, importance: int = 3) -> str:
        memory = hs.record(content, scope(config), **_args(importance))
        return saved_reply(memory.id)

    async def asave_memory(content: str, config: RunnableConfig, importance: int = 3) -> str:
        memory = await hs.arecord(content, scope(config), **_args(importance))
        return saved_reply(memory.id)

    return StructuredTool.from_function(
        func=save_memory, coroutine=asave_memory, name=name, description=SAVE_TOOL_DESCRIPTION
    )


def forget_tool(
    namespace: NamespaceTemplate,
    *,
    engine: Hindsight | None = None,
    name: str = FORGET_TOOL_NAME,
) -> StructuredTool:
    """A tool for "forget that": by default a demotion the user can still take back (the memory ranks low
    and the sweep takes it once idle), ``erase=True`` for the real erase."""
    scope = _Scope(namespace, "forget_tool")
    hs = resolve_engine(engine)

    def forget_in_scope(memory_id: str, config: RunnableConfig, erase: bool = False) -> str:
        return forget_memory(hs, memory_id, scope(config), erase=erase, by=f"tool:{name}")

    async def aforget_in_scope(memory_id: str, config: RunnableConfig, erase: bool = False) -> str:
        return await aforget_memory(hs, memory_id, scope(config), erase=erase, by=f"tool:{name}")

    return StructuredTool.from_function(
        func=forget_in_scope, coroutine=aforget_in_scope, name=name, description=FORGET_TOOL_DESCRIPTION
    )


def memory_tools(
    namespace: NamespaceTemplate, *, engine: Hindsight | None = None, session_id: str | None = None,
    shared: bool = True,
) -> list[StructuredTool]:
    """``[recall_memory, save_memory, forget_memory]`` for one namespace (or namespace template);
    ``shared`` is the recall tool's."""
    return [
        recall_tool(namespace, engine=engine, shared=shared),
        retain_tool(namespace, engine=engine, session_id=session_id),
        forget_tool(namespace, engine=engine),
    ]


__all__ = ["NOTHING", "forget_tool", "memory_tools", "recall_tool", "retain_tool"]
