"""``HindsightMemory``: a drop-in for ``ConversationBufferMemory`` in classic chains that also remembers.

The session buffer behaves exactly like ``ConversationBufferMemory`` (same fields, defaults, input and
output selection, errors). On top of it, ``load_memory_variables`` recalls what the engine knows that
is relevant to the current input — from earlier sessions, distilled facts, procedures — and puts it in
front of the buffer as one system message (messages mode) or one ``System:`` line (string mode), so a
prompt written for ``ConversationBufferMemory`` works unchanged."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from hindsight_core.integration import require

require("langchain_classic", "langchain")

from langchain_classic.memory.chat_memory import BaseChatMemory  # noqa: E402
from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.messages import BaseMessage, SystemMessage, get_buffer_string  # noqa: E402
from pydantic import Field, PrivateAttr, model_validator  # noqa: E402

from hindsight_core.integration import check_shared, query_text, require_namespace, resolve_engine  # noqa: E402
from hindsight_langchain._common import arecall_for_window, load, recall_for_window  # noqa: E402
from hindsight_langchain.chat_history import HindsightChatMessageHistory  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight, RecallResult


class HindsightMemory(BaseChatMemory):
    """Conversation memory with long-term recall.

    ``namespace`` scopes everything (one user or tenant); ``session_id`` names this conversation (a new
    one per instance when omitted). ``engine`` is a :class:`hindsight_core.Hindsight`; when omitted the
    process-wide embedded engine is used.

    ``clear()`` empties the session buffer and keeps long-term memory: what was said stays recallable.
    Forgetting is explicit (``chat_memory.forget()`` for the session, ``engine.forget(...)`` for one
    memory). Set ``context_key`` (e.g. ``"hindsight_context"``) to receive recalled memory in its own
    prompt variable instead of in front of the buffer. ``max_token_limit`` bounds the buffer to the
    latest turns that fit (``None``: the whole session, like ``ConversationBufferMemory``). ``shared``
    (default ``True``, as ``Hindsight.recall``) also searches the shared layers granted to the namespace
    or its root (``hs.grant("kb:support", to="user:42")``); a shared memory's line says
    ``shared from <namespace>``. ``False`` leaves them out."""

    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    memory_key: str = "history"
    chat_memory: BaseChatMessageHistory = Field(default=None)  # type: ignore[assignment]

    namespace: str
    session_id: str | None = None
    engine: Any = Field(default=None, exclude=True)
    context_key: str | None = None
    k: int = 5
    budget_tokens: int = 800
    layers: list[str] | None = None
    max_token_limit: int | None = None
    shared: bool = True

    _engine: Any = PrivateAttr(default=None)
    _last_recall: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic runs, so a missing or bad namespace raises InvalidInputError (with a
        # hint), not ValidationError, and ``shared="no"`` is refused instead of read as a bool.
        require_namespace(data.get("namespace"), who="HindsightMemory")
        check_shared(data.get("shared", True), who="HindsightMemory")
        super().__init__(**data)

    @model_validator(mode="after")
    def _connect(self) -> HindsightMemory:
        require_namespace(self.namespace, who="HindsightMemory")
        if self.session_id is None:
            self.session_id = uuid.uuid4().hex
        if self.context_key is not None and self.context_key == self.memory_key:
            raise ValueError("context_key must differ from memory_key")
        self._engine = resolve_engine(self.engine)
        if self.chat_memory is None:
            self.chat_memory = HindsightChatMessageHistory(self.namespace, self.session_id, engine=self._engine)
        return self

    @property
    def hindsight(self) -> Hindsight:
        """The engine this memory writes to and recalls from."""
        engine: Hindsight = self._engine
        return engine

    @property
    def last_recall(self) -> RecallResult | None:
        """What the last ``load_memory_variables`` recalled and why (hits with scores and sources)."""
        result: RecallResult | None = self._last_recall
        return result

    # -- the ConversationBufferMemory surface ----------------------------------------------------
    @property
    def buffer(self) -> Any:
        return self.buffer_as_messages if self.return_messages else self.buffer_as_str

    async def abuffer(self) -> Any:
        return await self.abuffer_as_messages() if self.return_messages else await self.abuffer_as_str()

    def _buffer_as_str(self, messages: list[BaseMessage]) -> str:
        return get_buffer_string(messages, human_prefix=self.human_prefix, ai_prefix=self.ai_prefix)

    @property
    def buffer_as_str(self) -> str:
        return self._buffer_as_str(self.buffer_as_messages)

    async def abuffer_as_str(self) -> str:
        return self._buffer_as_str(await self.abuffer_as_messages())

    @property
    def buffer_as_messages(self) -> list[BaseMessage]:
        return self._window_sync()[0]

    async def abuffer_as_messages(self) -> list[BaseMessage]:
        return (await self._window_async())[0]

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key] if self.context_key is None else [self.memory_key, self.context_key]

    # -- window ------------------------------------------------------------------------------------
    def _trim(self, messages: list[BaseMessage], ids: list[str | None]) -> tuple[list[BaseMessage], set[str]]:
        """The newest messages within ``max_token_limit`` (all when ``None``), and their memory ids."""
        if self.max_token_limit is not None:
            used, count = 0, 0
            for m in reversed(messages):
                used += self.hindsight.tokens.count(m.text or "")
                if count and used > self.max_token_limit:
                    break
                count += 1
            messages, ids = messages[len(messages) - count :], ids[len(ids) - count :]
        return messages, {i for i in ids if i}

    def _from_entries(self, entries: list[dict[str, Any]]) -> tuple[list[BaseMessage], set[str]]:
        return self._trim(load(entries), [e.get("memory_id") for e in entries])

    def _window_sync(self) -> tuple[list[BaseMessage], set[str]]:
        if isinstance(self.chat_memory, HindsightChatMessageHistory):
            return self._from_entries(self.chat_memory.entries())
        messages = list(self.chat_memory.messages)
        return self._trim(messages, [None] * len(messages))

    async def _window_async(self) -> tuple[list[BaseMessage], set[str]]:
        if isinstance(self.chat_memory, HindsightChatMessageHistory):
            return self._from_entries(await self.chat_memory.aentries())
        messages = list(await self.chat_memory.aget_messages())
        return self._trim(messages, [None] * len(messages))

    # -- load ------------------------------------------------------------------------------------
    def _query(self, inputs: dict[str, Any]) -> str | None:
        """The current input, chosen like ``save_context`` does; ``None`` (no recall) when ambiguous,
        because loading must not fail where ``ConversationBufferMemory`` would not."""
        if self.input_key is not None:
            value = inputs.get(self.input_key)
        else:
            keys = set(inputs).difference([*self.memory_variables, "stop"])
            value = inputs[next(iter(keys))] if len(keys) == 1 else None
        return query_text(value) if isinstance(value, str) and value.strip() else None

    def _recall_args(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "k": self.k,
            "budget_tokens": self.budget_tokens,
            "layers": self.layers,
            "subtree": True,
            "shared": self.shared,
        }

    def _variables(self, messages: list[BaseMessage], result: RecallResult | None) -> dict[str, Any]:
        self._last_recall = result
        context = result.to_prompt() if result is not None else ""
        if self.context_key is not None:
            history: list[BaseMessage] = messages
        else:
            history = [SystemMessage(content=context), *messages] if context else messages
        out: dict[str, Any] = {self.memory_key: history if self.return_messages else self._buffer_as_str(history)}
        if self.context_key is not None:
            out[self.context_key] = context
        return out

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The session buffer, led by what long-term memory holds about the current input."""
        messages, window = self._window_sync()
        query = self._query(inputs)
        result = None
        if query is not None:
            result = recall_for_window(self.hindsight, query, self.namespace, messages, window, **self._recall_args())
        return self._variables(messages, result)

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        messages, window = await self._window_async()
        query = self._query(inputs)
        result = None
        if query is not None:
            result = await arecall_for_window(
                self.hindsight, query, self.namespace, messages, window, **self._recall_args()
            )
        return self._variables(messages, result)

    # -- lifecycle -------------------------------------------------------------------------------
    def end_session(self) -> None:
        """Tell the engine this conversation is over, so it consolidates it in the background."""
        assert self.session_id is not None
        self.hindsight.end_session(self.namespace, self.session_id)

    async def aend_session(self) -> None:
        assert self.session_id is not None
        await self.hindsight.aend_session(self.namespace, self.session_id)


__all__ = ["HindsightMemory"]
