"""Helpers shared by the LangChain adapters: message (de)serialisation, what a turn records, and recall
that shows up in LangChain's callbacks (LangSmith and other tracers see it as a retriever run).

Everything engine-side comes from ``hindsight_core`` and ``hindsight_core.integration`` only (the
adapter boundary, enforced by ``tests/test_adapter_boundary.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hindsight_core.integration import require

require("langchain_core", "langchain")

from langchain_core.callbacks import AsyncCallbackManager, CallbackManager  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.runnables.config import RunnableConfig, ensure_config  # noqa: E402

from hindsight_core.integration import (  # noqa: E402
    hit_metadata,
    is_langchain_message,
    log_message,
    logged_message,
    query_text,
    without_known,
)

if TYPE_CHECKING:
    from hindsight_core import Hindsight, RecallHit, RecallResult

#: Name of the retriever run a recall emits in LangChain callbacks.
RECALL_RUN_NAME = "hindsight_recall"

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def role_of(message: BaseMessage) -> str:
    return _ROLES.get(message.type, message.type)


def memory_text(message: BaseMessage) -> str | None:
    """What long-term memory keeps of a message, or ``None`` when it is not something a person said.

    User and assistant text is recorded. Tool traffic is not: a tool call's JSON and a tool's reply
    (``"saved"``) are how the agent worked, not what the user said, and recalled later they crowd out
    the facts (the save tool records the fact itself). System prompts are instructions. All of them
    stay in the session log for exact replay."""
    if isinstance(message, ToolMessage) or message.type in ("tool", "function", "system"):
        return None
    text = message.text.strip()
    return text or None


def message_events(messages: Sequence[BaseMessage], session_id: str | None) -> list[dict[str, Any] | None]:
    """``record_many`` events for the messages worth remembering, aligned with ``messages`` (``None``
    where a message is kept only in the log)."""
    events: list[dict[str, Any] | None] = []
    for m in messages:
        text = memory_text(m)
        events.append(
            None if text is None else {"content": text, "session_id": session_id, "role": role_of(m), "metadata": {}}
        )
    return events


def dump(message: BaseMessage) -> dict[str, Any]:
    if not isinstance(message, BaseMessage):
        from hindsight_core.integration import InvalidInputError

        raise InvalidInputError(f"expected a LangChain BaseMessage, got {type(message).__name__}")
    data: dict[str, Any] = message_to_dict(message)
    return data


_BY_ROLE: dict[str, type[BaseMessage]] = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}


def load(entries: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """The messages of session-log entries. A message another framework logged (LlamaIndex's chat store
    on the same conversation id) is read by its role and text: a user turn is a ``HumanMessage``, an
    assistant turn an ``AIMessage``, any other role a ``ChatMessage`` of that role."""
    out: list[BaseMessage] = []
    for entry in entries:
        message = log_message(entry)
        if is_langchain_message(message):
            out.extend(messages_from_dict([message]))
            continue
        role, text = logged_message(message)
        kind = _BY_ROLE.get(role)
        out.append(kind(content=text) if kind is not None else ChatMessage(role=role, content=text))
    return out


def hit_document(hit: RecallHit, namespace: str) -> Document:
    """One hit of a recall in ``namespace`` as a ``Document``; metadata is the shape both frameworks share
    (:func:`hindsight_core.integration.hit_metadata`: ``memory_id``, ``score``, ``layer``, ``namespace``,
    ``shared_from`` for a memory of a shared layer ...)."""
    return Document(id=hit.memory.id, page_content=hit.memory.content, metadata=hit_metadata(hit, namespace))


def result_documents(result: RecallResult) -> list[Document]:
    """Every hit of ``result`` as a ``Document``, best first."""
    return [hit_document(hit, result.namespace) for hit in result.hits]


def _managed(config: RunnableConfig | None, namespace: str) -> dict[str, Any]:
    """The arguments of ``CallbackManager.configure`` (or the async one's) for a recall in this run:
    inside a run, ``ensure_config`` is the run's config (its callbacks, tags and metadata)."""
    config = ensure_config(config)
    return {
        "inheritable_callbacks": config.get("callbacks"),
        "inheritable_tags": config.get("tags"),
        "inheritable_metadata": {**(config.get("metadata") or {})},
        "local_metadata": {"namespace": namespace},
    }


def traced_recall(
    engine: Hindsight, query: str, namespace: str, config: RunnableConfig | None = None, **options: Any
) -> RecallResult:
    """``engine.recall`` as a retriever run (``on_retriever_start`` with the query,
    ``on_retriever_end`` with the hits as documents carrying their scores), a child of the current run."""
    query = query_text(query)
    manager = CallbackManager.configure(**_managed(config, namespace))
    run = manager.on_retriever_start(None, query, name=RECALL_RUN_NAME)
    try:
        result = engine.recall(query, namespace, **options)
    except Exception as exc:
        run.on_retriever_error(exc)
        raise
    run.on_retriever_end(result_documents(result))
    return result


async def atraced_recall(
    engine: Hindsight, query: str, namespace: str, config: RunnableConfig | None = None, **options: Any
) -> RecallResult:
    query = query_text(query)
    manager = AsyncCallbackManager.configure(**_managed(config, namespace))
    run = await manager.on_retriever_start(None, query, name=RECALL_RUN_NAME)
    try:
        result = await engine.arecall(query, namespace, **options)
    except Exception as exc:
        await run.on_retriever_error(exc)
        raise
    await run.on_retriever_end(result_documents(result))
    return result



def recall_for_window(
    engine: Hindsight, query: str, namespace: str, window: Sequence[BaseMessage], window_ids: set[str],
    config: RunnableConfig | None = None, **options: Any,
) -> RecallResult:
    """What a memory-backed chain injects next to its session window: a traced recall over the
    namespace's subtree, minus what the window already shows verbatim (by memory id or by text).
    ``result.to_prompt()`` is the block; ``""`` when nothing new is relevant."""
    result = traced_recall(engine, query, namespace, config, **options)
    return without_known(result, window_ids, {m.text.strip() for m in window})


async def arecall_for_window(
    engine: Hindsight, query: str, namespace: str, window: Sequence[BaseMessage], window_ids: set[str],
    config: RunnableConfig | None = None, **options: Any,
) -> RecallResult:
    result = await atraced_recall(engine, query, namespace, config, **options)
    return without_known(result, window_ids, {m.text.strip() for m in window})


def run_values(config: RunnableConfig | None, fields: Sequence[str]) -> dict[str, Any]:
    """The values of ``fields`` for this run: from the LangGraph runtime context (``context=`` of
    ``agent.invoke``; a mapping or an object with attributes) first, then ``config["configurable"]``."""
    config = ensure_config(config)
    configurable = config.get("configurable") or {}
    runtime = configurable.get("__pregel_runtime")
    context = getattr(runtime, "context", None)
    values: dict[str, Any] = {}
    for field in fields:
        value = context.get(field) if isinstance(context, dict) else getattr(context, field, None)
        if value is None:
            value = configurable.get(field)
        if value is not None:
            values[field] = value
    return values
