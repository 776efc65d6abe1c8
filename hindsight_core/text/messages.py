"""Chat messages as the two frameworks write them down, read by role and text.

LangChain's ``message_to_dict`` gives ``{"type": "human", "data": {"content": ...}}``; a LlamaIndex
``ChatMessage`` dump gives ``{"role": "user", "content": ...}`` or ``{"role": ..., "blocks": [...]}``.
``hindsight import`` reads files of either, and each adapter reads the other's session-log entries
(``hindsight_core.integration.logged_message``): one reader for both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hindsight_core.errors import InvalidInputError

#: LangChain message types → the speaker label the engine records (``chat`` carries its own role).
LANGCHAIN_ROLES = {
    "human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function",
    "chat": None, "HumanMessageChunk": "user", "AIMessageChunk": "assistant",
}


def is_langchain_message(message: Any) -> bool:
    """Whether a message dict is in LangChain's shape (``message_to_dict``: ``{"type", "data"}``)."""
    return isinstance(message, Mapping) and isinstance(message.get("type"), str) and isinstance(
        message.get("data"), Mapping)


def is_llamaindex_message(message: Any) -> bool:
    """Whether a message dict is in LlamaIndex's shape (a ``ChatMessage`` dump: ``{"role", ...}``)."""
    return isinstance(message, Mapping) and isinstance(message.get("role"), str) and "type" not in message


def content_text(content: object, where: str) -> str:
    """Message content as text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    raise InvalidInputError(f"{where}: content must be text or a list of text blocks, got {type(content).__name__}")


def langchain_role_text(message: Mapping[str, Any], where: str) -> tuple[str, str]:
    """``(role, text)`` of a message in LangChain's shape; an unknown type is its own role."""
    kind, data = str(message.get("type")), message["data"]
    role = LANGCHAIN_ROLES.get(kind, kind)
    if kind == "chat":
        role = str(data.get("role") or "user")
    return str(role), content_text(data.get("content", ""), where)


def llamaindex_role_text(message: Mapping[str, Any], where: str) -> tuple[str, str]:
    """``(role, text)`` of a message in LlamaIndex's shape (``content``, else its ``blocks``)."""
    content = message["content"] if message.get("content") is not None else message.get("blocks", [])
    return str(message.get("role") or "user"), content_text(content, where)
