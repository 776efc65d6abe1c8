"""Recall, save and forget as LlamaIndex ``FunctionTool``s, so an agent can search, add to and prune its
long-term memory itself. The names (``recall_memory``, ``save_memory``, ``forget_memory``) and
descriptions are the LangChain
adapter's, and so is the namespace: fixed (``"user:ana"``) or a template filled per call
(``"user:{user_id}"``, or LangMem-style labels ``("memories", "{user_id}")``).

A templated tool takes the workflow ``Context`` the agent hands to tools that ask for one, and reads each
field from the run's state (``FunctionAgent(initial_state=...)`` or ``await ctx.store.set("state",
{"user_id": "ana"})``), else from the context store's own key (``await ctx.store.set("user_id", "ana")``).
One agent then serves every user; a call whose run names no user fails instead of landing in someone
else's memory. Recall searches the namespace's subtree, so ``"user:{user_id}"`` finds the user's turns,
store items and saved facts alike, each shown with its id; ``forget_memory`` takes that id to demote the
memory (reversible) or, with ``erase=True``, erase it, and says "not found" for an id outside the subtree.
``shared`` (default ``True``, as ``Hindsight.recall``) lets recall search the shared layers granted to the
namespace or its root; a shared memory is shown read-only, without an id, and ``forget_memory`` never
reaches it (a grant lends memories to be read, not to be forgotten by the grantee).

Fixed-namespace tools have a real sync and a real async function. A templated tool's function is async
(the context store is), as agents call it; ``tool.call(...)`` runs it to completion."""

# No ``from __future__ import annotations``: FunctionTool finds the ``Context`` parameter by its
# annotation object, which a string annotation would hide.

from typing import TYPE_CHECKING, Any

from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from hindsight_core.integration import (
    FORGET_TOOL_DESCRIPTION,
    FORGET_TOOL_NAME,
    RECALL_TOOL_DESCRIPTION,
    RECALL_TOOL_NAME,
    SAVE_TOOL_DESCRIPTION,
    SAVE_TOOL_NAME,
    NamespaceScope,
    NamespaceTemplate,
    aforget_memory,
    check_session_id,
    check_shared,
    forget_memory,
    query_text,
    recall_reply,
    resolve_engine,
    saved_reply,
)
from hindsight_llamaindex._common import SOURCE, atraced_recall, traced_recall

if TYPE_CHECKING:
    from hindsight_core import Hindsight

RECALL_DESCRIPTION = RECALL_TOOL_DESCRIPTION
RETAIN_DESCRIPTION = SAVE_TOOL_DESCRIPTION


class _Scope(NamespaceScope):
    """The namespace of a tool: fixed, or a template filled from each call's workflow context."""

    async def __call__(self, ctx: Context | None) -> str:
        return self.fill(None if self.fixed is not None else await context_values(ctx, self.fields))


async def context_values(ctx: Context | None, fields: list[str]) -> dict[str, Any]:
    """The values of ``fields`` in a run: the agent's state (``ctx.store`` key ``"state"``, a mapping or
    an object with attributes) first, then the context store's own keys."""
    if ctx is None:
        return {}
    state = await ctx.store.get("state", default=None)
    values: dict[str, Any] = {}
    for field in fields:
        value = state.get(field) if isinstance(state, dict) else getattr(state, field, None)
        if value is None:
            value = await ctx.store.get(field, default=None)
        if value is not None:
            values[field] = value
    return values


def recall_tool(
    namespace: "NamespaceTemplate | None" = None,
    *,
    engine: "Hindsight | None" = None,
    session_id: str | None = None,
    k: int | None = None,
    budget_tokens: int | None = None,
    name: str = RECALL_TOOL_NAME,
    shared: bool = True,
) -> FunctionTool:
    """A tool returning what long-term memory holds about a query (the namespace's subtree and, unless
    ``shared=False``, the shared layers granted to it, read-only), as the text recall would inject with
    each memory's id; each recall is a retrieval span in LlamaIndex instrumentation."""
    scope = _Scope(namespace, "recall_tool")
    session = check_session_id(session_id)
    hs = resolve_engine(engine)
    options: dict[str, Any] = {
        "session_id": session, "k": k, "budget_tokens": budget_tokens, "subtree": True,
        "shared": check_shared(shared, who="recall_tool"),
    }

    if scope.fixed is not None:
        fixed = scope.fixed

        def recall_memory(query: str) -> str:
            """Search long-term memory."""
            return recall_reply(traced_recall(hs, query_text(query), fixed, **options))

        async def arecall_memory(query: str) -> str:
            """Search long-term memory."""
            return recall_reply(await atraced_recall(hs, query_text(query), fixed, **options))

        return FunctionTool.from_defaults(
            fn=recall_memory, async_fn=arecall_memory, name=name, description=RECALL_TOOL_DESCRIPTION
        )

    async def recall_memory_for(ctx: Context, query: str) -> str:
        """Search long-term memory."""
        return recall_reply(await atraced_recall(hs, query_text(query), await scope(ctx), **options))

    return FunctionTool.from_defaults(async_fn=recall_memory_for, name=name, description=RECALL_TOOL_DESCRIPTION)


def retain_tool(
    namespace: "NamespaceTemplate | None" = None,
    *,
    engine: "Hindsight | None" = None,
    session_id: str | None = None,
    name: str = SAVE_TOOL_NAME,
) -> FunctionTool:
    """A tool storing one thing worth remembering, in the namespace itself (a user's root)."""
    scope = _Scope(namespace, "retain_tool")
    session = check_session_id(session_id)
    hs = resolve_engine(engine)
    metadata = {"source": SOURCE, "via": name}

    def _args(importance: int) -> dict[str, Any]:
        return {
            "session_id": session,
            "role": "assistant",
            "kind": "event",
            "importance": importance,
            "metadata": metadata,
        }

    if scope.fixed is not None:
        fixed = scope.fixed

        def save_memory(content: str, importance: int = 3) -> str:
            """Save to long-term memory."""
            return saved_reply(hs.record(content, fixed, **_args(importance)).id)

        async def asave_memory(content: str, importance: int = 3) -> str:
            """Save to long-term memory."""
            return saved_reply((await hs.arecord(content, fixed, **_args(importance))).id)

        return FunctionTool.from_defaults(
            fn=save_memory, async_fn=asave_memory, name=name, description=SAVE_TOOL_DESCRIPTION
        )

    async def save_memory_for(ctx: Context, content: str, importance: int = 3) -> str:
        """Save to long-term memory."""
        return saved_reply((await hs.arecord(content, await scope(ctx), **_args(importance))).id)

    return FunctionTool.from_defaults(async_fn=save_memory_for, name=name, description=SAVE_TOOL_DESCRIPTION)


def forget_tool(
    namespace: "NamespaceTemplate | None" = None,
    *,
    engine: "Hindsight | None" = None,
    name: str = FORGET_TOOL_NAME,
) -> FunctionTool:
    """A tool for "forget that": by default a demotion the user can still take back (the memory ranks low
    and the sweep takes it once idle), ``erase=True`` for the real erase."""
    scope = _Scope(namespace, "forget_tool")
    hs = resolve_engine(engine)
    by = f"tool:{name}"

    if scope.fixed is not None:
        fixed = scope.fixed

        def forget_memory_in(memory_id: str, erase: bool = False) -> str:
            """Forget a memory."""
            return forget_memory(hs, memory_id, fixed, erase=erase, by=by)

        async def aforget_memory_in(memory_id: str, erase: bool = False) -> str:
            """Forget a memory."""
            return await aforget_memory(hs, memory_id, fixed, erase=erase, by=by)

        return FunctionTool.from_defaults(
            fn=forget_memory_in, async_fn=aforget_memory_in, name=name, description=FORGET_TOOL_DESCRIPTION
        )

    async def forget_memory_for(ctx: Context, memory_id: str, erase: bool = False) -> str:
        """Forget a memory."""
        return await aforget_memory(hs, memory_id, await scope(ctx), erase=erase, by=by)

    return FunctionTool.from_defaults(async_fn=forget_memory_for, name=name, description=FORGET_TOOL_DESCRIPTION)


def memory_tools(
    namespace: "NamespaceTemplate | None" = None,
    *,
    engine: "Hindsight | None" = None,
    session_id: str | None = None,
    shared: bool = True,
) -> list[FunctionTool]:
    """``[recall_memory, save_memory, forget_memory]`` for ``FunctionAgent(tools=...)``, for one namespace
    or template; ``shared`` is the recall tool's."""
    return [
        recall_tool(namespace, engine=engine, session_id=session_id, shared=shared),
        retain_tool(namespace, engine=engine, session_id=session_id),
        forget_tool(namespace, engine=engine),
    ]


__all__ = [
    "RECALL_DESCRIPTION", "RETAIN_DESCRIPTION", "context_values", "forget_tool", "memory_tools", "recall_tool",
    "retain_tool",
]
