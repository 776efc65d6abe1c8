"""``HindsightMemory``: the engine as the ``memory=`` of a LlamaIndex agent or chat engine.

It composes two things an agent needs at every step:

* the **session log** — the exact messages of this session (tool calls and tool results included),
  kept as an engine transcript so it survives restarts and the agent context's save/restore, trimmed to
  ``token_limit`` from the newest end the way ``ChatMemoryBuffer`` does;
* **recalled memory** — what the engine remembers about the user from any earlier session, for the
  latest user message, injected as a system message (or into the user message).

Every message put into it that a person said (not system prompts, tool results or messages without
text) is also recorded as an episode, so the next session can recall it."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.types import BaseMemory
from llama_index.core.utils import get_tokenizer

from hindsight_core.integration import (
    check_shared,
    check_transcript_key,
    engine_ref,
    log_message,
    query_text,
    require_namespace,
    resolve_engine,
    start_user,
    starting_template,
)
from hindsight_llamaindex._common import load_message, traced_recall, without_hits
from hindsight_llamaindex.chat_store import HindsightChatStore

if TYPE_CHECKING:
    from llama_index.core.llms.llm import LLM

    from hindsight_core import Hindsight, RecallResult

DEFAULT_TOKEN_LIMIT = 3000
#: Share of an LLM's context window given to the session log when ``llm=`` sets the limit.
TOKEN_LIMIT_RATIO = 0.75


def _new_session_id() -> str:
    return f"session-{uuid.uuid4().hex}"


class HindsightMemory(BaseMemory):
    """Short-term session log plus long-term recall, for one user (``namespace``) and one conversation
    (``session_id``; a fresh one per instance unless given).

    Clearing (``reset``) empties the session log only: what was said stays in long-term memory until it
    is forgotten explicitly through the engine. ``shared`` (default ``True``, as ``Hindsight.recall``)
    also recalls the shared layers granted to the namespace or its root (``hs.grant("kb:support",
    to="user:42")``); a shared memory's line says ``shared from <namespace>``. ``False`` leaves them out."""

    namespace: str = Field(description="Whose memory: a tenant scope such as 'user:42' (required).")
    session_id: str = Field(default_factory=_new_session_id, description="The conversation.")
    token_limit: int = Field(default=DEFAULT_TOKEN_LIMIT, gt=0, description="Token budget of the session log.")
    k: int | None = Field(default=None, description="Memories recalled per turn (engine default when None).")
    budget_tokens: int | None = Field(default=None, description="Token budget of the recalled memories.")
    insert_method: Literal["system", "user"] = Field(
        default="system", description="Inject recalled memory as a system message or into the user message."
    )
    layers: list[str] | None = Field(default=None, description="Layers recall searches (all when None).")
    shared: bool = Field(
        default=True,
        description="Also recall the shared layers granted to the namespace or its root (Hindsight.grant).",
    )
    engine_path: str | None = Field(default=None, description="Data directory of the engine (for reloading).")
    tokenizer_fn: Callable[[str], list[Any]] = Field(default_factory=get_tokenizer, exclude=True)

    _engine: Hindsight = PrivateAttr()
    _log: HindsightChatStore = PrivateAttr()
    _last_recall: RecallResult | None = PrivateAttr(default=None)

    def __init__(self, *, engine: Hindsight | None = None, starting_memories: Any = None, **data: Any) -> None:
        """``starting_memories``: a template the user's root gets when this memory is built, if the user
        is new, as ``Hindsight(starting_memories=...)`` takes it (not serialised with the memory)."""
        # A chat engine's ``memory_cls.from_defaults()`` names no user; pass
        # ``memory=HindsightMemory.from_defaults(namespace=...)`` instead (the error says so).
        who = "HindsightMemory (memory=HindsightMemory.from_defaults(namespace=...))"
        require_namespace(data.get("namespace"), who=who)
        check_shared(data.get("shared", True), who="HindsightMemory")  # "no" is refused, not read as a bool
        template = starting_template(starting_memories)
        super().__init__(**data)
        check_transcript_key(self.session_id)
        self._engine = resolve_engine(engine, self.engine_path)
        self.engine_path = engine_ref(self._engine)
        self._log = HindsightChatStore(namespace=self.namespace, engine=self._engine)
        start_user(self._engine, self.namespace, template)  # before anything of the user's is written

    @classmethod
    def class_name(cls) -> str:
        return "HindsightMemory"

    @classmethod
    def from_defaults(
        cls,
        namespace: str | None = None,
        session_id: str | None = None,
        engine: Hindsight | None = None,
        chat_history: list[ChatMessage] | None = None,
        token_limit: int | None = None,
        llm: LLM | None = None,
        starting_memories: Any = None,
        **kwargs: Any,
    ) -> HindsightMemory:
        """Build one; the signature also fits ``memory_cls=`` of chat engines (``chat_history=``,
        ``token_limit=``). ``chat_history`` replaces the session log (recording only new messages)."""
        unknown = set(kwargs) - {"k", "budget_tokens", "insert_method", "layers", "shared", "tokenizer_fn"}
        if unknown:
            raise ValueError(f"HindsightMemory.from_defaults got unexpected arguments: {sorted(unknown)}")
        if token_limit is None:
            token_limit = (
                int(llm.metadata.context_window * TOKEN_LIMIT_RATIO) if llm is not None else DEFAULT_TOKEN_LIMIT
            )
        data: dict[str, Any] = {"namespace": namespace, "token_limit": token_limit, **kwargs}
        if session_id is not None:
            data["session_id"] = session_id
        memory = cls(engine=engine, starting_memories=starting_memories, **data)
        if chat_history is not None:
            memory.set(chat_history)
        return memory

    # -- what the agent reads --------------------------------------------------------------------
    @property
    def engine(self) -> Hindsight:
        return self._engine

    @property
    def last_recall(self) -> RecallResult | None:
        """The recall behind the latest ``get`` (hits, scores, reasons), for inspection."""
        return self._last_recall

    def _window(self, messages: list[ChatMessage], initial_token_count: int) -> int:
        """How many of the newest messages fit the limit, by ``ChatMemoryBuffer``'s rules: a cut window never
        starts on an assistant or tool message (a tool result without its call is rejected by LLM APIs),
        and the newest message is always kept. Walks from the newest end, tokenizing each message once."""
        if initial_token_count > self.token_limit:
            raise ValueError("Initial token count exceeds token limit")
        used, count = initial_token_count, 0
        for message in reversed(messages):
            used += len(self.tokenizer_fn(str(message.content)))
            if used > self.token_limit:
                break
            count += 1
        while 1 < count < len(messages) and messages[-count].role in (MessageRole.TOOL, MessageRole.ASSISTANT):
            count -= 1
        return max(count, min(1, len(messages)))

    def get(self, input: str | ChatMessage | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The session's recent messages with recalled memory injected. Recall runs on ``input`` when
        given, else on the latest user message; memories already visible in the window are not repeated."""
        entries = self._engine.transcript(self.namespace, self.session_id) or []
        messages = [load_message(log_message(e)) for e in entries]
        count = self._window(messages, int(kwargs.get("initial_token_count", 0) or 0))
        window, shown = messages[len(messages) - count :], entries[len(entries) - count :]
        query = self._query(input, window)
        if not query:
            self._last_recall = None
            return window
        result = traced_recall(
            self._engine,
            query,
            self.namespace,
            session_id=self.session_id,
            k=self.k,
            budget_tokens=self.budget_tokens,
            layers=self.layers,
            subtree=True,  # the user's root and everything under it
            shared=self.shared,
        )
        result = without_hits(result, {e["memory_id"] for e in shown if e.get("memory_id")})
        self._last_recall = result
        return self._inject(window, result.to_prompt())

    @staticmethod
    def _query(input: str | ChatMessage | None, window: list[ChatMessage]) -> str:
        if isinstance(input, ChatMessage):
            input = input.content
        if not isinstance(input, str) or not input.strip():
            users = [m for m in window if m.role == MessageRole.USER and (m.content or "").strip()]
            input = users[-1].content if users else ""
        return query_text(input or "")

    def _inject(self, window: list[ChatMessage], text: str) -> list[ChatMessage]:
        """Copies of the stored messages with ``text`` added: the session log itself never holds recall.

        In ``system`` mode the memories are their own system message right after the user message they
        were recalled for. Not at the front: ``ReActAgent`` drops the first system message of its input
        (it takes it for its own prompt), and the memories would silently go with it. Not merged into
        the agent's prompt either, for the same reason. A tool call and its result are never split."""
        if not text:
            return window
        result = [copy.deepcopy(m) for m in window]
        last_user = next((i for i in range(len(result) - 1, -1, -1) if result[i].role == MessageRole.USER), None)
        if self.insert_method == "system":
            position = len(result) if last_user is None else last_user + 1
            result.insert(position, ChatMessage(role=MessageRole.SYSTEM, blocks=[TextBlock(text=text)]))
        elif last_user is not None:
            user = result[last_user]
            user.blocks = [TextBlock(text=text + "\n\n"), *user.blocks]
        else:
            result.append(ChatMessage(role=MessageRole.USER, blocks=[TextBlock(text=text)]))
        return result

    def get_all(self) -> list[ChatMessage]:
        """The whole session log, without recall."""
        return self._log.get_messages(self.session_id)

    # -- what the agent writes -------------------------------------------------------------------
    def put(self, message: ChatMessage) -> None:
        self._log.add_message(self.session_id, message)

    def put_messages(self, messages: list[ChatMessage]) -> None:
        self._log.add_messages(self.session_id, list(messages))

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the session log; messages it already holds are not recorded again (agents pass their
        whole history on every run), only the new tail is."""
        self._log.set_messages(self.session_id, list(messages))

    def reset(self) -> None:
        """Empty the session log; long-term memory is kept."""
        self._log.delete_messages(self.session_id)

    # -- async twins: the sync method in a worker thread -----------------------------------------
    async def aget(self, input: str | ChatMessage | None = None, **kwargs: Any) -> list[ChatMessage]:
        return await asyncio.to_thread(self.get, input, **kwargs)

    async def aget_all(self) -> list[ChatMessage]:
        return await asyncio.to_thread(self.get_all)

    async def aput(self, message: ChatMessage) -> None:
        await asyncio.to_thread(self.put, message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        await asyncio.to_thread(self.put_messages, messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        await asyncio.to_thread(self.set, messages)

    async def areset(self) -> None:
        await asyncio.to_thread(self.reset)
