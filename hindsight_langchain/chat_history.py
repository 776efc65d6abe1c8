"""``HindsightChatMessageHistory``: a LangChain chat history whose log is the engine's episodic record.

Each message becomes one episode of the session (so it is recallable from any later session of the
same namespace) and keeps its exact serialised form in metadata, so tool calls and tool messages come
back unchanged. ``messages`` is the verbatim session log, never recall output: ``RunnableWithMessageHistory``
re-reads it after each turn and must find exactly what it wrote."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hindsight_core.optional import require

require("langchain_core", "langchain")

from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.messages import BaseMessage  # noqa: E402

from hindsight_langchain._common import (  # noqa: E402
    CLEAR_KEY,
    message_events,
    resolve_engine,
    session_log,
    to_messages,
)

if TYPE_CHECKING:
    from hindsight_core import Hindsight, Memory


class HindsightChatMessageHistory(BaseChatMessageHistory):
    """The message log of one session (``session_id``) of one user or tenant (``namespace``).

    ``clear()`` empties the session log as LangChain sees it but keeps the episodes as long-term
    memory (recall still finds them); call :meth:`forget` to delete the session's messages for good."""

    def __init__(self, namespace: str, session_id: str, *, engine: Hindsight | None = None) -> None:
        from hindsight_core.validation import check_namespace, check_session_id

        self.namespace = check_namespace(namespace)
        session = check_session_id(session_id)
        if session is None:
            raise ValueError("session_id is required")
        self.session_id: str = session
        self.engine = resolve_engine(engine)

    # -- reads -----------------------------------------------------------------------------------
    def session_memories(self) -> list[Memory]:
        """The memories behind ``messages`` (ids, timestamps), for adapters that de-duplicate recall."""
        return session_log(self.engine.find(self.namespace, session_id=self.session_id, layer="episodic"))

    async def asession_memories(self) -> list[Memory]:
        return session_log(await self.engine.afind(self.namespace, session_id=self.session_id, layer="episodic"))

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return to_messages(self.session_memories())

    async def aget_messages(self) -> list[BaseMessage]:
        return to_messages(await self.asession_memories())

    # -- writes ----------------------------------------------------------------------------------
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            self.engine.record_many(message_events(messages, self.session_id), self.namespace)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            await self.engine.arecord_many(message_events(messages, self.session_id), self.namespace)

    def _marker(self) -> dict[str, object]:
        return {
            "session_id": self.session_id,
            "role": "system",
            "kind": "event",
            "metadata": {CLEAR_KEY: True},
            "index": False,
        }

    def clear(self) -> None:
        """Start an empty log for the session; the earlier turns stay in long-term memory."""
        self.engine.record("[chat history cleared]", self.namespace, **self._marker())  # type: ignore[arg-type]

    async def aclear(self) -> None:
        await self.engine.arecord("[chat history cleared]", self.namespace, **self._marker())  # type: ignore[arg-type]

    def forget(self) -> int:
        """Delete every message of the session from the engine (explicit forgetting); returns how many."""
        found = self.engine.find(self.namespace, session_id=self.session_id, layer="episodic")
        return sum(self.engine.forget(m.id, namespace=self.namespace) for m in found)

    def __repr__(self) -> str:
        return f"HindsightChatMessageHistory(namespace={self.namespace!r}, session_id={self.session_id!r})"


__all__ = ["HindsightChatMessageHistory"]
