"""``HindsightChatStore``: a LlamaIndex ``BaseChatStore`` whose lists are durable engine transcripts and
whose messages are also recorded as episodes, so a chat store user gets long-term recall for free.

The list (key -> ordered messages) is exact: it lives in the engine's transcript for
``(namespace, key)``, never consolidated, decayed or evicted. The episodes are the engine's long-term
memory of the same messages. Deleting from the list removes it from the short-term history only; what
was said stays remembered until it is forgotten explicitly (``Hindsight.forget`` /
``forget_namespace``), the same rule as clearing a LangChain memory."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import ChatMessage
from llama_index.core.storage.chat_store.base import BaseChatStore
from llama_index.core.storage.chat_store.loading import RECOGNIZED_CHAT_STORES

from hindsight_core.integration import (
    check_transcript_key,
    engine_ref,
    log_message,
    require_namespace,
    resolve_engine,
)
from hindsight_llamaindex._common import dump_message, episode_events, is_recordable, load_message

if TYPE_CHECKING:
    from hindsight_core import Hindsight

Entry = dict[str, Any]


class HindsightChatStore(BaseChatStore):
    """Chat lists per key, durable in the engine; every new message is also an episode of the namespace
    with ``session_id = key``.

    Differences from ``SimpleChatStore``, all deliberate: out-of-range indexes (negative ones too) and
    deleting the last message of an empty list return ``None`` instead of raising ``IndexError``; keys
    must be non-empty strings of at most 200 characters; returned messages are copies."""

    namespace: str = Field(description="Tenant scope of the lists and episodes, e.g. 'user:42' (required).")
    record_episodes: bool = Field(default=True, description="Also record each new message as an episode.")
    engine_path: str | None = Field(default=None, description="Data directory of the engine (for reloading).")

    _engine: Hindsight = PrivateAttr()

    def __init__(self, *, engine: Hindsight | None = None, **data: Any) -> None:
        require_namespace(data.get("namespace"), who="HindsightChatStore")
        super().__init__(**data)
        self._engine = resolve_engine(engine, self.engine_path)
        self.engine_path = engine_ref(self._engine)

    @classmethod
    def from_defaults(
        cls, namespace: str | None = None, engine: Hindsight | None = None, record_episodes: bool = True
    ) -> HindsightChatStore:
        return cls(namespace=namespace, engine=engine, record_episodes=record_episodes)

    @classmethod
    def class_name(cls) -> str:
        return "HindsightChatStore"

    @property
    def engine(self) -> Hindsight:
        return self._engine

    # -- internals -------------------------------------------------------------------------------
    def _record(self, key: str, messages: list[ChatMessage]) -> list[str | None]:
        """Record the recordable messages as episodes in one batch; the memory id per message (or None)."""
        ids: list[str | None] = [None] * len(messages)
        if not self.record_episodes:
            return ids
        events = episode_events(
            messages, key, self._engine.config.write.max_content_chars, extra={"chat_store_key": key}
        )
        if not events:
            return ids
        stored = iter(self._engine.record_many(events, self.namespace))

        for index, message in enumerate(messages):
            if is_recordable(message):
                ids[index] = next(stored).id
        return ids

    def _entries(self, key: str) -> list[Entry] | None:
        return self._engine.transcript(self.namespace, key)

    # -- BaseChatStore ---------------------------------------------------------------------------
    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the list. Messages already in it keep their episode; only new ones are recorded, so an
        agent that sets its whole history every run does not record the same turn twice."""
        key = check_transcript_key(key)
        dumped = [dump_message(m) for m in messages]
        known: dict[str, int] = defaultdict(int)
        for entry in self._entries(key) or []:
            known[_fingerprint(entry["message"])] += 1
        fresh: list[int] = []
        for i, d in enumerate(dumped):
            fp = _fingerprint(d)
            if known[fp]:
                known[fp] -= 1
            else:
                fresh.append(i)
        recorded = dict(zip(fresh, self._record(key, [messages[i] for i in fresh]), strict=True))

        def edit(current: list[Entry] | None) -> list[Entry]:
            reuse: dict[str, list[str | None]] = defaultdict(list)
            for entry in current or []:
                reuse[_fingerprint(entry["message"])].append(entry.get("memory_id"))
            result = []
            for i, d in enumerate(dumped):
                same = reuse.get(_fingerprint(d))
                memory_id = same.pop(0) if same else recorded.get(i)
                result.append({"message": d, "memory_id": memory_id})
            return result

        self._engine.edit_transcript(self.namespace, key, edit)

    def get_messages(self, key: str) -> list[ChatMessage]:
        return [load_message(log_message(e)) for e in self._entries(key) or []]

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append (or insert at ``idx``, as ``SimpleChatStore`` does) and record the message as an episode."""
        key = check_transcript_key(key)
        entry = {"message": dump_message(message), "memory_id": self._record(key, [message])[0]}

        def edit(current: list[Entry] | None) -> list[Entry]:
            result = list(current or [])
            if idx is None:
                result.append(entry)
            else:
                result.insert(idx, entry)
            return result

        self._engine.edit_transcript(self.namespace, key, edit)

    def add_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Append several messages in one transcript write and one embedding batch."""
        key = check_transcript_key(key)
        dumped = [dump_message(m) for m in messages]  # validate everything before recording anything
        entries = [
            {"message": d, "memory_id": memory_id}
            for d, memory_id in zip(dumped, self._record(key, list(messages)), strict=True)
        ]
        self._engine.edit_transcript(self.namespace, key, lambda current: [*(current or []), *entries])

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        removed: list[list[Entry] | None] = [None]

        def edit(current: list[Entry] | None) -> None:
            removed[0] = current
            return None

        self._engine.edit_transcript(self.namespace, key, edit)
        return None if removed[0] is None else [load_message(log_message(e)) for e in removed[0]]

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        return self._pop(key, idx)

    def delete_last_message(self, key: str) -> ChatMessage | None:
        return self._pop(key, -1)

    def _pop(self, key: str, idx: int) -> ChatMessage | None:
        removed: list[Entry | None] = [None]

        def edit(current: list[Entry] | None) -> list[Entry] | None:
            if current is None or not -len(current) <= idx < len(current):
                return current
            removed[0] = current.pop(idx)
            return current

        if self._entries(key) is None:  # a missing key stays missing, and costs no write
            return None
        self._engine.edit_transcript(self.namespace, key, edit)
        return None if removed[0] is None else load_message(log_message(removed[0]))

    def get_keys(self) -> list[str]:
        return self._engine.transcript_keys(self.namespace)

    # -- native async twins (one implementation path: the sync method in a worker thread) ---------
    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        await asyncio.to_thread(self.set_messages, key, messages)

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        return await asyncio.to_thread(self.get_messages, key)

    async def async_add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        await asyncio.to_thread(self.add_message, key, message, idx)

    async def adelete_messages(self, key: str) -> list[ChatMessage] | None:
        return await asyncio.to_thread(self.delete_messages, key)

    async def adelete_message(self, key: str, idx: int) -> ChatMessage | None:
        return await asyncio.to_thread(self.delete_message, key, idx)

    async def adelete_last_message(self, key: str) -> ChatMessage | None:
        return await asyncio.to_thread(self.delete_last_message, key)

    async def aget_keys(self) -> list[str]:
        return await asyncio.to_thread(self.get_keys)


def _fingerprint(dumped: dict[str, Any]) -> str:
    import json

    return json.dumps(dumped, sort_keys=True, ensure_ascii=False)


# ``ChatMemoryBuffer.from_dict`` (an agent context restored from JSON) rebuilds its chat store through this
# registry; without the entry a buffer backed by this store could be saved but not restored.
RECOGNIZED_CHAT_STORES.setdefault(HindsightChatStore.class_name(), HindsightChatStore)  # type: ignore[arg-type]
