"""Starting memories (table ``starting_memories``): which root namespaces a template was decided for.

One row per root, inserted in the transaction that writes the template's memories; the primary key
makes the decision once per root whatever the number of processes sharing the store (the second writer
inserts nothing and writes no memory). The ``namespace`` column puts the row under
``forget_namespace``'s generic purge: a user forgotten entirely is a new user again."""

from __future__ import annotations

from hindsight_core.store.sql import RelationalStore


def claim(tx: RelationalStore, root: str, *, at: float, template: str) -> bool:
    """Take the decision for ``root`` inside the caller's transaction; ``False`` when another caller (this
    process or another) took it first."""
    done = tx.execute(
        "INSERT INTO starting_memories(namespace, applied_at, template, applied) VALUES (?, ?, ?, 0) "
        "ON CONFLICT(namespace) DO NOTHING",
        (root, at, template),
    )
    return done.rowcount == 1


def applied(tx: RelationalStore, root: str, count: int) -> None:
    """How many memories the claim of ``root`` wrote (0: the root held memories already)."""
    tx.execute("UPDATE starting_memories SET applied = ? WHERE namespace = ?", (count, root))


def decided(store: RelationalStore, root: str) -> tuple[float, str, int] | None:
    """``(applied_at, template, applied)`` for a root already decided, else ``None``."""
    rows = store.query("SELECT applied_at, template, applied FROM starting_memories WHERE namespace = ?", (root,))
    if not rows:
        return None
    at, template, count = rows[0]
    return float(at), str(template), int(count)
