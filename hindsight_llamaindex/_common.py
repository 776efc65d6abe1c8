"""What every LlamaIndex adapter shares: the engine each one talks to, and how chat messages become
episodes and transcript entries.

Adapters are pydantic models that LlamaIndex serialises (an agent's context is saved as JSON), but an
engine is a live object with open files. So a model stores only ``engine_path``; the engine itself sits in
a private attribute, and a model rebuilt from JSON finds the live engine of that path again in this
process (or opens the data directory when none is open)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_core.optional import require

require("llama_index.core", "llamaindex")

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight
    from hindsight_core.recall.types import RecallHit, RecallResult

#: Namespace used when a framework builds the adapter itself (e.g. ``memory_cls.from_defaults()``).
DEFAULT_NAMESPACE = "default"
#: Stamped into the metadata of every episode an adapter records, so the source is visible in stats.
SOURCE = "llamaindex"

_live: weakref.WeakValueDictionary[str, Hindsight] = weakref.WeakValueDictionary()
_live_lock = threading.Lock()


def _key(path: Path) -> str:
    return str(path.expanduser().resolve())


def engine_ref(engine: Hindsight) -> str:
    """Remember a live engine under its data directory and return that directory (what is serialised)."""
    key = _key(engine.path)
    with _live_lock:
        _live[key] = engine
    return key


def resolve_engine(engine: Hindsight | None, engine_path: str | None = None) -> Hindsight:
    """The engine an adapter uses: the one given, else the live engine of ``engine_path`` (an adapter
    rebuilt from JSON), else the data directory opened afresh, else the process-wide shared engine."""
    from hindsight_core import Hindsight as _Hindsight
    from hindsight_core.engine import default_path, shared_engine

    if engine is not None:
        if not isinstance(engine, _Hindsight):
            raise TypeError(f"engine must be a hindsight_core.Hindsight, got {type(engine).__name__}")
        return engine
    if engine_path is not None:
        with _live_lock:
            live = _live.get(_key(Path(engine_path)))
        if live is not None:
            return live
        if _key(Path(engine_path)) != _key(default_path()):
            opened = _Hindsight(engine_path)
            engine_ref(opened)
            return opened
    return shared_engine()


def message_text(message: ChatMessage) -> str:
    """The text of a message as a memory: its text blocks, else a rendering of its tool calls (so "which
    tool did you call last time" has something to find), else ``""`` (an image alone is not recorded)."""
    text = "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text.strip())
    if text.strip():
        return text
    calls: list[str] = []
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            calls.append(f"{block.tool_name}({block.tool_kwargs})")
    for call in message.additional_kwargs.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else getattr(call, "function", None)
        name = function.get("name") if isinstance(function, dict) else getattr(function, "name", None)
        args = function.get("arguments") if isinstance(function, dict) else getattr(function, "arguments", "")
        if name:
            calls.append(f"{name}({args})")
    return f"[tool call] {'; '.join(calls)}" if calls else ""


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
        from hindsight_core.errors import InvalidInputError

        raise InvalidInputError(f"expected a llama_index ChatMessage, got {type(message).__name__}")
    data: dict[str, Any] = json.loads(message.model_dump_json())
    return data


def load_message(data: dict[str, Any]) -> ChatMessage:
    return ChatMessage.model_validate(data)


def render_hits(hits: Sequence[RecallHit]) -> list[str]:
    """One line (plus cited excerpts) per hit, most relevant first: what a prompt shows of a memory — the
    text the engine packed into the budget."""
    from hindsight_core.recall.types import render_hit

    return [hit.text or render_hit(hit.memory, hit.memory.content) for hit in hits]


def render_prompt(lines: Sequence[str]) -> str:
    """The block's text: the core's header and quoted lines (one rendering for every adapter)."""
    from hindsight_core.recall.types import render_prompt as core_render_prompt

    return core_render_prompt(lines)


def hit_metadata(hit: RecallHit) -> dict[str, Any]:
    """The memory's identity and provenance, flat and JSON-safe (what a node or tool result carries)."""
    m = hit.memory
    return {
        "memory_id": m.id,
        "namespace": m.namespace,
        "session_id": m.session_id,
        "layer": m.layer.value,
        "kind": m.kind.value,
        "role": m.role,
        "occurred_at": m.occurred_at.isoformat(),
        "importance": m.importance,
        "status": m.status.value,
        "source_ids": list(m.source_ids),
        "source_id": m.source_id,
        "entities": list(m.entities),
        "score": hit.score,
        "channels": dict(hit.channels),
        "reason": hit.reason,
        "sources": [s.content for s in hit.sources],
        "metadata": dict(m.metadata),
    }


def without_hits(result: RecallResult, hidden: set[str]) -> RecallResult:
    """The result minus the hits whose memory ids are in ``hidden`` (already in the prompt verbatim)."""
    if not hidden:
        return result
    return result.model_copy(update={"hits": [h for h in result.hits if h.memory.id not in hidden]})
