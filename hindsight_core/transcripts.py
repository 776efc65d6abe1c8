"""The transcript service of the engine: exact, durable, ordered logs of JSON entries per (namespace, key).

Memories are the engine's *interpretation* of a conversation: they are deduplicated, consolidated,
superseded, cooled and archived. Framework adapters also need the conversation itself, verbatim and in
order (a chat store, a session log an agent replays with its tool calls), and that must not move when
the lifecycle does. A transcript is that verbatim log. It lives in the relational store next to the
memories, is walled by namespace like them, and is deleted by ``forget_namespace``; it is never
indexed, recalled or evicted. Adapters record the same messages as episodes for recall.

Every change goes through :meth:`edit_transcript`, which runs the caller's edit inside one write
transaction: a read-modify-write from several processes cannot lose an update."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hindsight_core.clock import to_ts
from hindsight_core.errors import InvalidInputError
from hindsight_core.store import transcripts as transcript_rows
from hindsight_core.validation import check_json, check_namespace, check_transcript_key

if TYPE_CHECKING:
    from hindsight_core.context import EngineContext

Entries = list[Any]


def _encode(entries: object) -> list[str]:
    if not isinstance(entries, list):
        raise InvalidInputError(f"a transcript is a list of JSON values, got {type(entries).__name__}")
    encoded: list[str] = []
    for index, entry in enumerate(entries):
        # Depth-checked like metadata (the encoder recurses); entries keep verbatim messages, so no size cap.
        encoded.append(check_json(entry, what=f"transcript entry {index}", max_bytes=None))
    return encoded


class TranscriptService:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    def _read_raw(self, namespace: str, key: str) -> list[str] | None:
        return transcript_rows.read(self.store, namespace, key)

    def transcript(self, namespace: str, key: str) -> Entries | None:
        """The entries of a transcript, oldest first; ``None`` when the key does not exist (an existing
        transcript may be empty)."""
        raw = self._read_raw(check_namespace(namespace), check_transcript_key(key))
        return None if raw is None else [json.loads(e) for e in raw]

    def transcript_keys(self, namespace: str) -> list[str]:
        """The namespace's transcript keys, in the order they were created."""
        namespace = check_namespace(namespace)
        return transcript_rows.keys(self.store, namespace)

    def edit_transcript(
        self, namespace: str, key: str, edit: Callable[[Entries | None], Entries | None]
    ) -> Entries | None:
        """Atomically replace a transcript by ``edit(current)``; returns the new entries.

        ``edit`` gets the current entries (a fresh list, or ``None`` when the key does not exist) and
        returns the new list, or ``None`` to delete the key. It runs inside the write transaction, so
        it sees the latest committed state; if it raises, or returns something that is not a list of
        JSON values, nothing changes. Appending (the new list starts with the old one) writes only the
        new tail."""
        namespace = check_namespace(namespace)
        key = check_transcript_key(key)
        if not callable(edit):
            raise InvalidInputError(f"edit must be a callable, got {type(edit).__name__}")
        now = to_ts(self.ctx.now())
        with self.store.transaction() as tx:
            old = self._read_raw(namespace, key)
            new = edit(None if old is None else [json.loads(e) for e in old])
            if new is None:
                transcript_rows.delete(tx, namespace, key)
                return None
            encoded = _encode(new)
            transcript_rows.write(tx, namespace, key, old, encoded, now)
        return [json.loads(e) for e in encoded]

    def holds(self, namespace: str) -> bool:
        """Whether the namespace has a transcript (a namespace with no memories is still known then)."""
        return transcript_rows.holds_namespace(self.store, namespace)


__all__ = ["Entries", "TranscriptService"]
