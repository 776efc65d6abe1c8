"""Recall and retain as LangChain tools, for agents that decide themselves when to remember."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight_core.optional import require

require("langchain_core", "langchain")

from langchain_core.tools import StructuredTool  # noqa: E402

from hindsight_langchain._common import resolve_engine  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight

NOTHING = "No relevant memories."


def recall_tool(
    namespace: str,
    *,
    engine: Hindsight | None = None,
    k: int = 5,
    budget_tokens: int = 800,
    name: str = "recall_memory",
) -> StructuredTool:
    """A tool returning what long-term memory holds about a query, as the text recall would inject."""
    from hindsight_core.validation import check_namespace

    check_namespace(namespace)
    hs = resolve_engine(engine)

    def recall_memory(query: str) -> str:
        return hs.recall(query, namespace, k=k, budget_tokens=budget_tokens).to_prompt() or NOTHING

    async def arecall_memory(query: str) -> str:
        return (await hs.arecall(query, namespace, k=k, budget_tokens=budget_tokens)).to_prompt() or NOTHING

    return StructuredTool.from_function(
        func=recall_memory,
        coroutine=arecall_memory,
        name=name,
        description=(
            "Search long-term memory about the user (facts, preferences, earlier conversations). "
            "Input: what you want to know, in a few words."
        ),
    )


def retain_tool(
    namespace: str,
    *,
    engine: Hindsight | None = None,
    session_id: str | None = None,
    name: str = "save_memory",
) -> StructuredTool:
    """A tool storing one thing worth remembering; consolidation later distils it with the rest."""
    from hindsight_core.validation import check_namespace

    check_namespace(namespace)
    hs = resolve_engine(engine)

    def _args(importance: int) -> dict[str, object]:
        return {
            "session_id": session_id,
            "role": "agent",
            "kind": "event",
            "importance": importance,
            "metadata": {"via": name},
        }

    def save_memory(content: str, importance: int = 3) -> str:
        memory = hs.record(content, namespace, **_args(importance))  # type: ignore[arg-type]
        return f"Saved memory {memory.id}."

    async def asave_memory(content: str, importance: int = 3) -> str:
        memory = await hs.arecord(content, namespace, **_args(importance))  # type: ignore[arg-type]
        return f"Saved memory {memory.id}."

    return StructuredTool.from_function(
        func=save_memory,
        coroutine=asave_memory,
        name=name,
        description=(
            "Save one thing worth remembering about the user for future conversations, as a short "
            "standalone sentence. importance: 1 (trivia) to 5 (safety-critical, e.g. allergies)."
        ),
    )


def memory_tools(
    namespace: str, *, engine: Hindsight | None = None, session_id: str | None = None
) -> list[StructuredTool]:
    """``[recall_memory, save_memory]`` for one namespace."""
    return [
        recall_tool(namespace, engine=engine),
        retain_tool(namespace, engine=engine, session_id=session_id),
    ]


__all__ = ["NOTHING", "memory_tools", "recall_tool", "retain_tool"]
