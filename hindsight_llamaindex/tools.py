"""Recall and retain as LlamaIndex ``FunctionTool``s, so an agent can search and add to its long-term
memory itself (each tool has a real sync and a real async function)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llama_index.core.tools import FunctionTool

from hindsight_llamaindex._common import DEFAULT_NAMESPACE, resolve_engine

if TYPE_CHECKING:
    from hindsight_core import Hindsight

RECALL_DESCRIPTION = (
    "Search your long-term memory of this user (earlier conversations, facts, preferences). "
    "Input: what you want to know, as a short question. Returns the relevant memories, or says none matched."
)
RETAIN_DESCRIPTION = (
    "Save something worth remembering about this user for future conversations (a fact, preference, "
    "decision or plan), as one self-contained sentence."
)
NOTHING_FOUND = "No relevant memories."


def recall_tool(
    namespace: str = DEFAULT_NAMESPACE,
    *,
    engine: Hindsight | None = None,
    session_id: str | None = None,
    k: int | None = None,
    budget_tokens: int | None = None,
    name: str = "recall_memory",
) -> FunctionTool:
    hs = resolve_engine(engine)

    def recall_memory(query: str) -> str:
        """Search long-term memory."""
        text = hs.recall(query, namespace, session_id=session_id, k=k, budget_tokens=budget_tokens).to_prompt()
        return text or NOTHING_FOUND

    async def arecall_memory(query: str) -> str:
        """Search long-term memory."""
        result = await hs.arecall(query, namespace, session_id=session_id, k=k, budget_tokens=budget_tokens)
        return result.to_prompt() or NOTHING_FOUND

    return FunctionTool.from_defaults(
        fn=recall_memory, async_fn=arecall_memory, name=name, description=RECALL_DESCRIPTION
    )


def retain_tool(
    namespace: str = DEFAULT_NAMESPACE,
    *,
    engine: Hindsight | None = None,
    session_id: str | None = None,
    importance: int | None = None,
    name: str = "retain_memory",
) -> FunctionTool:
    hs = resolve_engine(engine)
    metadata = {"source": "llamaindex", "via": name}

    def retain_memory(content: str) -> str:
        """Save to long-term memory."""
        memory = hs.record(
            content,
            namespace,
            session_id=session_id,
            role="assistant",
            kind="event",
            importance=importance,
            metadata=metadata,
        )
        return f"Saved to memory (id {memory.id})."

    async def aretain_memory(content: str) -> str:
        """Save to long-term memory."""
        memory = await hs.arecord(
            content,
            namespace,
            session_id=session_id,
            role="assistant",
            kind="event",
            importance=importance,
            metadata=metadata,
        )
        return f"Saved to memory (id {memory.id})."

    return FunctionTool.from_defaults(
        fn=retain_memory, async_fn=aretain_memory, name=name, description=RETAIN_DESCRIPTION
    )


def memory_tools(
    namespace: str = DEFAULT_NAMESPACE, *, engine: Hindsight | None = None, session_id: str | None = None
) -> list[FunctionTool]:
    """``[recall_tool, retain_tool]`` for ``FunctionAgent(tools=...)``."""
    return [
        recall_tool(namespace, engine=engine, session_id=session_id),
        retain_tool(namespace, engine=engine, session_id=session_id),
    ]
