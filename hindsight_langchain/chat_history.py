"""``HindsightChatMessageHistory``: a LangChain chat history kept as an engine transcript.

``messages`` is the exact session log (``message_to_dict`` round trip, so tool calls and tool messages
come back unchanged) and never holds recall output: ``RunnableWithMessageHistory`` re-reads it after a
turn and must find exactly what it wrote. What a person said (user and assistant text) is also recorded
as an episode of the namespace, so a later session can recall it; tool calls, tool results and system
prompts are kept in the log only.

The log is the same concept the LlamaIndex chat store uses (``hindsight_core.integration.SessionLog``):
one transcript per ``(namespace, session_id)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hindsight_core.integration import require

require("langchain_core", "langchain")

from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.messages import BaseMessage  # noqa: E402

from hindsight_core.integration import (  # noqa: E402
    InvalidInputError,
    SessionLog,
    check_session_id,
    require_namespace,
    resolve_engine,
)
from hindsight_langchain._common import dump, load, message_events  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight


class HindsightChatMessageHistory(BaseChatMessageHistory):
    """The message log of one session (``session_id``) of one user or tenant (``namespace``).

    ``clear()`` deletes the session log and keeps the episodes recorded from it (recall still finds
    them: forgetting is explicit); :meth:`forget` deletes both."""

    def __init__(self, namespace: str, session_id: str, *, engine: Hindsight | None = None) -> None:
        self.namespace = require_namespace(namespace, who="HindsightChatMessageHistory")
        session = check_session_id(session_id)
        if session is None:
            raise InvalidInputError("HindsightChatMessageHistory needs a session_id (one per conversation)")
        self.session_id: str = session
        self.engine = resolve_engine(engine)
        self.log = SessionLog(self.engine, self.namespace, self.session_id)

    # -- reads -----------------------------------------------------------------------------------
    def entries(self) -> list[dict[str, Any]]:
        """The log's entries (``{"message": ..., "memory_id": ...}``), oldest first."""
        return self.log.entries() or []

    async def aentries(self) -> list[dict[str, Any]]:
        return await self.engine.atranscript(self.namespace, self.session_id) or []

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return load(self.entries())

    async def aget_messages(self) -> list[BaseMessage]:
        return load(await self.aentries())

    # -- writes ----------------------------------------------------------------------------------
    def _events(self, messages: Sequence[BaseMessage]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The log entries (memory ids still to fill) and the episodes to record; validates everything
        first, so a refused call changes nothing."""
        dumped = [dump(m) for m in messages]
        limit = self.engine.config.write.max_content_chars
        events = message_events(messages, self.session_id)
        for event in events:
            if event is not None:
                event["content"] = event["content"][:limit]
        entries = [{"message": d, "memory_id": None, "_event": e} for d, e in zip(dumped, events, strict=True)]
        return entries, [e for e in events if e is not None]

    @staticmethod
    def _fill(entries: list[dict[str, Any]], memory_ids: list[str]) -> list[dict[str, Any]]:
        ids = iter(memory_ids)
        return [
            {"message": e["message"], "memory_id": next(ids) if e["_event"] is not None else None} for e in entries
        ]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if not messages:
            return
        entries, events = self._events(messages)
        stored = self.engine.record_many(events, self.namespace) if events else []
        self.log.append(self._fill(entries, [m.id for m in stored]))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if not messages:
            return
        entries, events = self._events(messages)
        stored = await self.engine.arecord_many(events, self.namespace) if events else []
        filled = self._fill(entries, [m.id for m in stored])
        await self.engine.aedit_transcript(
            self.namespace, self.session_id, lambda current: [*(current or []), *filled]
        )

    def clear(self) -> None:
        """Delete the session log; what was said stays in long-term memory."""
        self.log.clear()

    async def aclear(self) -> None:
        await self.engine.aedit_transcript(self.namespace, self.session_id, lambda current: None)

    def forget(self) -> int:
        """Delete the session log and every episode of the session (explicit forgetting); returns how
        many memories were deleted."""
        self.log.clear()
        found = self.engine.find(self.namespace, session_id=self.session_id, layer="episodic")
        return sum(self.engine.forget(m.id, namespace=self.namespace) for m in found)

    def __repr__(self) -> str:
        return f"HindsightChatMessageHistory(namespace={self.namespace!r}, session_id={self.session_id!r})"


__all__ = ["HindsightChatMessageHistory"]
