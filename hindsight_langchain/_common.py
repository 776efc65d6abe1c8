"""Helpers shared by the adapters: the engine to use, message (de)serialisation, recall filtering.

Every adapter talks to the engine through its public API only (``record``, ``find``, ``recall``,
``forget`` and their async twins), so an adapter never depends on which backends are configured."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hindsight_core.optional import require

require("langchain_core", "langchain")

from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    message_to_dict,
    messages_from_dict,
)

if TYPE_CHECKING:
    from hindsight_core import Hindsight, Memory
    from hindsight_core.recall.types import RecallResult

#: Metadata key holding the serialised LangChain message of a recorded turn.
MESSAGE_KEY = "lc_message"
#: Metadata key of the marker that ``clear()`` leaves in a session log.
CLEAR_KEY = "lc_clear"

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


#: Recall refuses longer queries; an adapter cuts the input instead, because a chat turn that
#: ``ConversationBufferMemory`` accepts must not fail just because memory is attached.
MAX_QUERY_CHARS = 4_000


def query_text(text: str) -> str:
    return text[:MAX_QUERY_CHARS]


def resolve_engine(engine: Hindsight | None) -> Hindsight:
    """The engine passed in, or the process-wide embedded one (so ``HindsightMemory()`` just works)."""
    if engine is not None:
        return engine
    from hindsight_core import shared_engine

    return shared_engine()


def role_of(message: BaseMessage) -> str:
    return _ROLES.get(message.type, message.type)


def message_text(message: BaseMessage) -> str:
    """What the engine indexes for a message: its text, plus the tool calls an AI message makes (an AI
    turn that only calls tools has no text, and the engine refuses empty content)."""
    text = message.text.strip()
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = "; ".join(
            f"{call['name']}({json.dumps(call.get('args', {}), ensure_ascii=False, sort_keys=True)})"
            for call in message.tool_calls
        )
        text = f"{text}\n[tool calls] {calls}".strip()
    return text or f"[{message.type} message]"


def message_events(messages: Sequence[BaseMessage], session_id: str | None) -> list[dict[str, Any]]:
    """``record_many`` events for messages; the exact message rides in metadata for a lossless read."""
    return [
        {
            "content": message_text(m),
            "session_id": session_id,
            "role": role_of(m),
            "metadata": {MESSAGE_KEY: message_to_dict(m)},
        }
        for m in messages
    ]


def session_log(memories: Iterable[Memory]) -> list[Memory]:
    """The turns of a session after its last ``clear()`` marker, in write order."""
    log: list[Memory] = []
    for m in memories:
        if CLEAR_KEY in m.metadata:
            log = []
        elif MESSAGE_KEY in m.metadata:
            log.append(m)
    return log


def to_messages(memories: Iterable[Memory]) -> list[BaseMessage]:
    return list(messages_from_dict([m.metadata[MESSAGE_KEY] for m in memories]))


def without_known(result: RecallResult, known_ids: set[str], known_texts: set[str] | None = None) -> RecallResult:
    """Drop hits the prompt already shows: turns in the window, and distilled memories whose every
    source is in the window. Recall adds what the window lacks; repeating the window wastes budget."""
    texts = known_texts or set()
    kept = []
    for hit in result.hits:
        m = hit.memory
        if m.id in known_ids or m.content.strip() in texts:
            continue
        episodes = [s for s in m.source_ids if s]
        if m.layer.value != "episodic" and episodes and all(s in known_ids for s in episodes):
            continue
        kept.append(hit)
    if len(kept) == len(result.hits):
        return result
    return result.model_copy(update={"hits": kept})
