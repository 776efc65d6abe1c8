"""Recall and save as LlamaIndex ``FunctionTool``s, so an agent can search and add to its long-term
memory itself (each tool has a real sync and a real async function). The names (``recall_memory``,
``save_memory``) and descriptions are the same as the LangChain adapter's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llama_index.core.tools import FunctionTool

from hindsight_core.integration import (
    NOTHING_FOUND,
    RECALL_TOOL_DESCRIPTION,
    RECALL_TOOL_NAME,
    SAVE_TOOL_DESCRIPTION,
    SAVE_TOOL_NAME,
    check_session_id,
    query_text,
    require_namespace,
    resolve_engine,
    saved_reply,
)
from hindsight_llamaindex._common import SOURCE, atraced_recall, traced_recall

if TYPE_CHECKING:
    from hindsight_core import Hindsight

RECALL_DESCRIPTION = RECALL_TOOL_DESCRIPTION
RETAIN_DESCRIPTION = SAVE_TOOL_DESCRIPTION


def recall_tool(
    namespace: str | None = None,
    *,
    engine: Hindsight | None = None,
    session_id: str | None = None,
    k: int | None = None,
    budget_tokens: int | None = None,
    name: str = RECALL_TOOL_NAME,
) -> FunctionTool:
    namespace_ = require_namespace(namespace, who="recall_tool")
    session = check_session_id(session_id)
    hs = resolve_engine(engine)

    def recall_memory(query: str) -> str:
        """Search long-term memory."""
        result = traced_recall(hs, query_text(query), namespace_, session_id=session, k=k, budget_tokens=budget_tokens)
        return result.to_prompt() or NOTHING_FOUND

    async def arecall_memory(query: str) -> str:
        """Search long-term memory."""
        result = await atraced_recall(
            hs, query_text(query), namespace_, session_id=session, k=k, budget_tokens=budget_tokens
        )
        return result.to_prompt() or NOTHING_FOUND

    return FunctionTool.from_defaults(
        fn=recall_memory, async_fn=arecall_memory, name=name, description=RECALL_TOOL_DESCRIPTION
    )


def retain_tool(
    namespace: str | None = None,
    *,
    engine: Hindsight | None = None,
    session_id: str | None = None,
    name: str = SAVE_TOOL_NAME,
) -> FunctionTool:
    namespace_ = require_namespace(namespace, who="retain_tool")
    session = check_session_id(session_id)
    hs = resolve_engine(engine)
    metadata = {"source": SOURCE, "via": name}

    def save_memory(content: str, importance: int = 3) -> str:
        """Save to long-term memory."""
        memory = hs.record(
            content,
            namespace_,
            session_id=session,
            role="assistant",
            kind="event",
            importance=importance,
            metadata=metadata,
        )
        return saved_reply(memory.id)

    async def asave_memory(content: str, importance: int = 3) -> str:
        """Save to long-term memory."""
        memory = await hs.arecord(
            content,
            namespace_,
            session_id=session,
            role="assistant",
            kind="event",
            importance=importance,
            metadata=metadata,
        )
        return saved_reply(memory.id)

    return FunctionTool.from_defaults(
        fn=save_memory, async_fn=asave_memory, name=name, description=SAVE_TOOL_DESCRIPTION
    )


def memory_tools(
    namespace: str | None = None, *, engine: Hindsight | None = None, session_id: str | None = None
) -> list[FunctionTool]:
    """``[recall_memory, save_memory]`` for ``FunctionAgent(tools=...)``."""
    return [
        recall_tool(namespace, engine=engine, session_id=session_id),
        retain_tool(namespace, engine=engine, session_id=session_id),
    ]
