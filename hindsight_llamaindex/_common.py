"""What every LlamaIndex adapter shares: how chat messages become session-log entries and episodes,
and recall that shows up in LlamaIndex instrumentation.

Adapters are pydantic models that LlamaIndex serialises (an agent's context is saved as JSON), but an
engine is a live object with open files. So a model stores only ``engine_path``; the engine itself sits in
a private attribute, and a model rebuilt from JSON finds the live engine of that path again in this
process (``hindsight_core.integration.resolve_engine``, the resolver the LangChain adapters use too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hindsight_core.integration import require

require("llama_index.core", "llamaindex")

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock  # noqa: E402
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent  # noqa: E402
from llama_index.core.schema import NodeWithScore, TextNode  # noqa: E402

from hindsight_core.integration import (  # noqa: E402
    HIT_METADATA_KEYS,
    InvalidInputError,
    hit_metadata,
    is_llamaindex_message,
    logged_message,
    query_text,
)

if TYPE_CHECKING:
    from hindsight_core import Hindsight, RecallResult

#: Stamped into the metadata of every episode an adapter records, so the source is visible in stats.
SOURCE = "llamaindex"

dispatcher = get_dispatcher(__name__)


def message_text(message: ChatMessage) -> str:
    """The text of a message as a memory: its text blocks, else ``""``. A message that only calls
    tools, and a tool's result, are not something the user said: they stay in the session log for
    replay and are not recorded (recalled later they crowd out the facts; the save tool records the
    fact itself). An image alone is not recorded either."""
    if message.role == MessageRole.TOOL:
        return ""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text.strip())


def is_recordable(message: ChatMessage) -> bool:
    """System prompts are instructions, not things that happened: recording them would make every recall
    return "You are a helpful assistant"."""
    return message.role not in (MessageRole.SYSTEM, MessageRole.DEVELOPER) and bool(message_text(message))


def episode_events(
    messages: Sequence[ChatMessage],
    session_id: str | None,
    max_chars: int,
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``record_many`` events for the recordable messages, in order (long texts cut to the engine's limit)."""
    events: list[dict[str, Any]] = []
    for message in messages:
        if not is_recordable(message):
            continue
        metadata: dict[str, Any] = {"source": SOURCE, **(extra or {})}
        events.append(
            {
                "content": message_text(message)[:max_chars],
                "session_id": session_id,
                "role": message.role.value,
                "metadata": metadata,
            }
        )
    return events


def dump_message(message: ChatMessage) -> dict[str, Any]:
    """A JSON-safe dict that :func:`load_message` turns back into an equal message (role, blocks,
    additional_kwargs — bytes and nested models go through LlamaIndex's own serialiser)."""
    import json

    if not isinstance(message, ChatMessage):
        from hindsight_core.integration import InvalidInputError

        raise InvalidInputError(f"expected a llama_index ChatMessage, got {type(message).__name__}")
    data: dict[str, Any] = json.loads(message.model_dump_json())
    return data


def load_message(data: dict[str, Any]) -> ChatMessage:
    """A logged message as a ``ChatMessage``. One that LangChain logged on the same conversation id is
    read by its role and text (a LangChain ``human`` turn is a ``user`` message); validating its dict
    as a ``ChatMessage`` would give an empty user message."""
    if is_llamaindex_message(data):
        return ChatMessage.model_validate(data)
    role, text = logged_message(data)
    try:
        return ChatMessage(role=MessageRole(role), content=text)
    except ValueError:
        raise InvalidInputError(f"a logged message with a role LlamaIndex has no name for: {role!r}") from None


#: What an LLM reads next to a memory's text: its kind and date (to weigh an old memory), and for a
#: memory of a shared layer the namespace it was shared from (as its prompt line says); the rest of the
#: hit metadata (ids, scores, provenance) is for code.
_SHOWN_TO_LLM = ("kind", "occurred_at", "source_id", "shared_from")
HIDDEN_FROM_LLM = [k for k in HIT_METADATA_KEYS if k not in _SHOWN_TO_LLM]


def hit_nodes(result: RecallResult) -> list[NodeWithScore]:
    """Each hit as a scored node: id = memory id, text = the memory, metadata = the shared hit shape.
    ``shared_from`` reaches the LLM only when set: "shared_from: None" on every own memory says nothing."""
    nodes = []
    for hit in result.hits:
        metadata = hit_metadata(hit, result.namespace)
        hidden = HIDDEN_FROM_LLM if metadata["shared_from"] else [*HIDDEN_FROM_LLM, "shared_from"]
        node = TextNode(
            id_=hit.memory.id,
            text=hit.memory.content,
            metadata=metadata,
            excluded_llm_metadata_keys=list(hidden),
            excluded_embed_metadata_keys=list(hidden),
        )
        nodes.append(NodeWithScore(node=node, score=hit.score))
    return nodes


@dispatcher.span
def traced_recall(engine: Hindsight, query: str, namespace: str, **options: Any) -> RecallResult:
    """``engine.recall`` inside an instrumentation span, between a ``RetrievalStartEvent`` (the query)
    and a ``RetrievalEndEvent`` (the hits as scored nodes), as a LlamaIndex retriever emits them, so
    Arize Phoenix / OpenTelemetry handlers see what memory injected and why."""
    query = query_text(query)
    dispatcher.event(RetrievalStartEvent(str_or_query_bundle=query))
    result = engine.recall(query, namespace, **options)
    dispatcher.event(RetrievalEndEvent(str_or_query_bundle=query, nodes=hit_nodes(result)))
    return result


@dispatcher.span
async def atraced_recall(engine: Hindsight, query: str, namespace: str, **options: Any) -> RecallResult:
    query = query_text(query)
    dispatcher.event(RetrievalStartEvent(str_or_query_bundle=query))
    result = await engine.arecall(query, namespace, **options)
    dispatcher.event(RetrievalEndEvent(str_or_query_bundle=query, nodes=hit_nodes(result)))
    return result


def without_hits(result: RecallResult, hidden: set[str]) -> RecallResult:
    """The result minus the hits whose memory ids are in ``hidden`` (already in the prompt verbatim)."""
    if not hidden:
        return result
    return result.model_copy(update={"hits": [h for h in result.hits if h.memory.id not in hidden]})
