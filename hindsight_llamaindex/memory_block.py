"""``HindsightMemoryBlock``: long-term recall as one block of LlamaIndex's ``Memory``.

``Memory.from_defaults(memory_blocks=[HindsightMemoryBlock(namespace="user:1")])`` keeps LlamaIndex's own
short-term queue and adds what the engine recalls for the recent messages to the system message.
``Memory`` hands a block only the messages that overflow its token limit, so recording every turn
needs an explicit write path as well: use :class:`~hindsight_llamaindex.HindsightMemory`, or record
through the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.utils import get_tokenizer

from hindsight_core.integration import (
    check_shared,
    engine_ref,
    query_text,
    render_lines,
    render_prompt,
    require_namespace,
    resolve_engine,
)
from hindsight_llamaindex._common import atraced_recall, episode_events

if TYPE_CHECKING:
    from hindsight_core import Hindsight, RecallResult

SESSION_STAMP = "session_id"


class HindsightMemoryBlock(BaseMemoryBlock[str]):
    """Recalled memories for the tail of the conversation, one line each, most relevant first.

    ``shared`` (default ``True``, as ``Hindsight.recall``) also recalls the shared layers granted to the
    namespace or its root; a shared memory's line says ``shared from <namespace>``. ``False`` leaves them
    out."""

    name: str = Field(default="hindsight_memory", description="The block's tag in the memory template.")
    description: str | None = Field(default="What the assistant remembers about the user from earlier.")
    priority: int = Field(
        default=1,
        description="Truncation order (0 = never cut). Cut first by default: it drops its weakest memories.",
    )
    namespace: str = Field(description="Whose memory: a tenant scope such as 'user:42' (required).")
    k: int | None = Field(default=None, description="Memories recalled per turn (engine default when None).")
    budget_tokens: int | None = Field(default=None, description="Token budget of the recalled memories.")
    query_messages: int = Field(default=1, ge=1, description="How many recent user messages form the query.")
    layers: list[str] | None = Field(default=None, description="Layers recall searches (all when None).")
    shared: bool = Field(
        default=True,
        description="Also recall the shared layers granted to the namespace or its root (Hindsight.grant).",
    )
    engine_path: str | None = Field(default=None, description="Data directory of the engine (for reloading).")

    _engine: Hindsight = PrivateAttr()
    #: The scored lines behind the last returned text, so ``atruncate`` can drop the weakest first.
    _scored: dict[str, list[tuple[float, str]]] = PrivateAttr(default_factory=dict)
    _last_recall: RecallResult | None = PrivateAttr(default=None)

    def __init__(self, *, engine: Hindsight | None = None, **data: Any) -> None:
        require_namespace(data.get("namespace"), who="HindsightMemoryBlock")
        check_shared(data.get("shared", True), who="HindsightMemoryBlock")  # "no" is refused, not read as a bool
        super().__init__(**data)
        self._engine = resolve_engine(engine, self.engine_path)
        self.engine_path = engine_ref(self._engine)

    @property
    def engine(self) -> Hindsight:
        return self._engine

    @property
    def last_recall(self) -> RecallResult | None:
        return self._last_recall

    def _query(self, messages: list[ChatMessage] | None) -> str:
        users = [m.content for m in messages or [] if m.role == MessageRole.USER and (m.content or "").strip()]
        return query_text("\n".join(str(u) for u in users[-self.query_messages :]))

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = self._query(messages)
        if not query:
            return ""
        session_id = block_kwargs.get("session_id")
        result = await atraced_recall(
            self._engine,
            query,
            self.namespace,
            session_id=session_id if isinstance(session_id, str) else None,
            k=self.k,
            budget_tokens=self.budget_tokens,
            layers=self.layers,
            subtree=True,  # the user's root and everything under it
            shared=self.shared,
        )
        self._last_recall = result
        if not result.hits:
            return ""
        lines = render_lines(result)  # a shared memory's line says "shared from <namespace>"
        text = render_prompt(lines)
        self._scored = {text: [(hit.score, line) for hit, line in zip(result.hits, lines, strict=True)]}
        return text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Record messages ``Memory`` flushed from its queue, under the session they were stamped with
        (the stamp itself is ``Memory`` bookkeeping, not part of what was said)."""
        by_session: dict[str | None, list[ChatMessage]] = {}
        for message in messages:
            clean = message.model_copy(deep=True)
            stamp = clean.additional_kwargs.pop(SESSION_STAMP, None)
            by_session.setdefault(stamp if isinstance(stamp, str) and stamp.strip() else None, []).append(clean)
        max_chars = self._engine.config.write.max_content_chars
        events = [
            event
            for session_id, group in by_session.items()
            for event in episode_events(group, session_id, max_chars, extra={"memory_block": self.name})
        ]
        if events:
            await self._engine.arecord_many(events, self.namespace)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the lowest-scored memories until about ``tokens_to_truncate`` tokens are freed; ``None``
        when nothing is left (the block is then left out)."""
        scored = self._scored.get(content)
        if scored is None:  # content this block did not produce: the default, all or nothing
            return None
        tokenizer = get_tokenizer()
        kept = list(scored)
        freed = 0
        while kept and freed < tokens_to_truncate:
            weakest = min(range(len(kept)), key=lambda i: kept[i][0])
            freed += len(tokenizer(kept.pop(weakest)[1]))
        if not kept:
            return None
        text = render_prompt([line for _, line in kept])
        self._scored[text] = kept
        return text
