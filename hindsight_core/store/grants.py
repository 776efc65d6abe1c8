"""Grants (table ``namespace_grants``): which namespaces may read a shared namespace's knowledge.

One row per (shared namespace, grantee). The ``namespace`` column is the shared namespace, which puts
its grants under ``forget_namespace``'s generic purge; a forgotten grantee's rows go with it
(``revoke_all_to``), so neither side leaves its name behind. Recall reads the rows on every call, so a
revoked grant takes effect on the next recall, in every process sharing the store."""

from __future__ import annotations

from hindsight_core.store.sql import RelationalStore

#: ``(shared namespace, grantee, granted_at, write)``.
Row = tuple[str, str, float, bool]


def put(tx: RelationalStore, namespace: str, grantee: str, at: float, *, write: bool = False) -> bool:
    """Grant ``grantee`` read access to ``namespace``, and write access (promotion) with ``write``;
    ``False`` when it was granted already: the first grant's time is kept, the write access is set as
    given."""
    done = tx.execute(
        "INSERT INTO namespace_grants(namespace, grantee, granted_at, can_write) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(namespace, grantee) DO NOTHING",
        (namespace, grantee, at, int(write)),
    )
    if done.rowcount == 1:
        return True
    tx.execute("UPDATE namespace_grants SET can_write = ? WHERE namespace = ? AND grantee = ?",
               (int(write), namespace, grantee))
    return False


def delete(tx: RelationalStore, namespace: str, grantee: str) -> bool:
    """Revoke one grant; ``False`` when there was none."""
    done = tx.execute("DELETE FROM namespace_grants WHERE namespace = ? AND grantee = ?", (namespace, grantee))
    return done.rowcount > 0


def revoke_all_to(tx: RelationalStore, grantee: str) -> int:
    """Drop every grant to ``grantee`` (a namespace being forgotten)."""
    return int(tx.execute("DELETE FROM namespace_grants WHERE grantee = ?", (grantee,)).rowcount)


def listed(store: RelationalStore, namespace: str | None = None) -> list[Row]:
    """Rows (``Row``), all of them or those naming ``namespace`` on either side, in name order."""
    sql = "SELECT namespace, grantee, granted_at, can_write FROM namespace_grants"
    params: tuple[str, ...] = ()
    if namespace is not None:
        sql += " WHERE namespace = ? OR grantee = ?"
        params = (namespace, namespace)
    rows = store.query(sql + " ORDER BY namespace, grantee", params)
    return [(str(ns), str(grantee), float(at), bool(write)) for ns, grantee, at, write in rows]


def readable_by(store: RelationalStore, grantees: list[str], *, writing: bool = False) -> list[str]:
    """The shared namespaces granted to any of ``grantees`` (exact names), in name order; ``writing``:
    only those granted with write access."""
    if not grantees:
        return []
    marks = ", ".join("?" for _ in grantees)
    only = " AND can_write = 1" if writing else ""
    rows = store.query(f"SELECT DISTINCT namespace FROM namespace_grants WHERE grantee IN ({marks}){only} "
                       "ORDER BY namespace", tuple(grantees))
    return [str(r[0]) for r in rows]
