"""Transcript rows (tables ``transcripts``, ``transcript_entries``): verbatim ordered logs per
(namespace, key). The facet in ``hindsight_core/transcripts.py`` validates and decodes; this module
only reads and writes the rows, inside the caller's transaction for writes."""

from __future__ import annotations

from collections.abc import Sequence

from hindsight_core.store.sql import RelationalStore


def read(store: RelationalStore, namespace: str, key: str) -> list[str] | None:
    """The encoded entries of a transcript in order; ``None`` when the key does not exist."""
    if not store.query("SELECT 1 FROM transcripts WHERE namespace = ? AND tkey = ?", (namespace, key)):
        return None
    rows = store.query(
        "SELECT entry FROM transcript_entries WHERE namespace = ? AND tkey = ? ORDER BY pos", (namespace, key)
    )
    return [r[0] for r in rows]


def keys(store: RelationalStore, namespace: str) -> list[str]:
    """The namespace's transcript keys in creation order."""
    return [r[0] for r in store.query("SELECT tkey FROM transcripts WHERE namespace = ? ORDER BY seq", (namespace,))]


def holds_namespace(store: RelationalStore, namespace: str) -> bool:
    return bool(store.query("SELECT 1 FROM transcripts WHERE namespace = ? LIMIT 1", (namespace,)))


def delete(tx: RelationalStore, namespace: str, key: str) -> None:
    tx.execute("DELETE FROM transcript_entries WHERE namespace = ? AND tkey = ?", (namespace, key))
    tx.execute("DELETE FROM transcripts WHERE namespace = ? AND tkey = ?", (namespace, key))


def write(
    tx: RelationalStore, namespace: str, key: str, old: Sequence[str] | None, new: Sequence[str], now: float
) -> None:
    """Replace the transcript ``old`` (as read in this transaction; ``None``: absent) by ``new``.
    When ``new`` starts with ``old`` (an append) only the new tail is written."""
    if old is None:
        tx.execute(
            "INSERT INTO transcripts(namespace, tkey, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (namespace, key, now, now),
        )
        start = 0
    else:
        tx.execute("UPDATE transcripts SET updated_at = ? WHERE namespace = ? AND tkey = ?", (now, namespace, key))
        start = len(old) if list(new[: len(old)]) == list(old) else 0
        if start == 0:
            tx.execute("DELETE FROM transcript_entries WHERE namespace = ? AND tkey = ?", (namespace, key))
    tx.executemany(
        "INSERT INTO transcript_entries(namespace, tkey, pos, entry) VALUES (?, ?, ?, ?)",
        [(namespace, key, pos, new[pos]) for pos in range(start, len(new))],
    )
