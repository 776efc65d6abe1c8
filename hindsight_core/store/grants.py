"""Grants (table ``namespace_grants``): which namespaces may read a shared namespace's knowledge.

One row per (shared namespace, grantee). The ``namespace`` column is the shared namespace, which puts
its grants under ``forget_namespace``'s generic purge; a forgotten grantee's rows go with it
(``revoke_all_to``), so neither side leaves its name behind. Recall reads the rows on every call, so a
revoked grant takes effect on the next recall, in every process sharing the store."""

from __future__ import annotations

from hindsight_core.store.sql import RelationalStore

Row = tuple[str, str, float]


def put(tx: RelationalStore, namespace: str, grantee: str, at: float) -> bool:
    """Grant ``grantee`` read access to ``namespace``; ``False`` when it was granted already (the first
    grant's time is kept)."""
    done = tx.execute(
        "INSERT INTO namespace_grants(namespace, grantee, granted_at) VALUES (?, ?, ?) "
        "ON CONFLICT(namespace, grantee) DO NOTHING",
        (namespace, grantee, at),
    )
    return done.rowcount == 1


def delete(tx: RelationalStore, namespace: str, grantee: str) -> bool:
    """Revoke one grant; ``False`` when there was none."""
    done = tx.execute("DELETE FROM namespace_grants WHERE namespace = ? AND grantee = ?", (namespace, grantee))
    return done.rowcount > 0


def revoke_all_to(tx: RelationalStore, grantee: str) -> int:
    """Drop every grant to ``grantee`` (a namespace being forgotten)."""
    return int(tx.execute("DELETE FROM namespace_grants WHERE grantee = ?", (grantee,)).rowcount)


def listed(store: RelationalStore, namespace: str | None = None) -> list[Row]:
    """``(shared namespace, grantee, granted_at)`` rows, all of them or those naming ``namespace`` on
    either side, in name order."""
    sql = "SELECT namespace, grantee, granted_at FROM namespace_grants"
    params: tuple[str, ...] = ()
    if namespace is not None:
        sql += " WHERE namespace = ? OR grantee = ?"
        params = (namespace, namespace)
    rows = store.query(sql + " ORDER BY namespace, grantee", params)
    return [(str(ns), str(grantee), float(at)) for ns, grantee, at in rows]


def readable_by(store: RelationalStore, grantees: list[str]) -> list[str]:
    """The shared namespaces granted to any of ``grantees`` (exact names), in name order."""
    if not grantees:
        return []
    marks = ", ".join("?" for _ in grantees)
    rows = store.query(f"SELECT DISTINCT namespace FROM namespace_grants WHERE grantee IN ({marks}) "
                       "ORDER BY namespace", tuple(grantees))
    return [str(r[0]) for r in rows]
