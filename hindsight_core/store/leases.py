"""Leases in the relational store: at most one live owner per name, across every process sharing it.

A lease is a row (name, owner, expires_at). Acquiring is one statement that inserts the row or takes
it over when it has expired (or is already ours), so two processes can never both believe they hold
it. An owner that dies simply stops renewing: once ``expires_at`` passes, the next caller takes over.
Times are the engine clock's unix seconds, so tests expire a lease by moving the clock."""

from __future__ import annotations

import os
import socket
import uuid

from hindsight_core.store.sql import RelationalStore


def new_owner() -> str:
    """An owner id unique to this engine instance: host and pid say who it was, the random part tells
    two engines of one process (and a reused pid) apart."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def acquire(store: RelationalStore, name: str, owner: str, now: float, duration: float) -> bool:
    """Take the lease (or extend it, if ours) until ``now + duration``; False while another owner's
    lease is live."""
    with store.transaction() as tx:
        tx.execute(
            "INSERT INTO leases(name, owner, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at "
            "WHERE leases.expires_at < ? OR leases.owner = excluded.owner",
            (name, owner, now + duration, now),
        )
        rows = tx.query("SELECT owner FROM leases WHERE name = ?", (name,))
    return bool(rows) and rows[0][0] == owner


def renew(store: RelationalStore, name: str, owner: str, now: float, duration: float) -> bool:
    """Extend our lease; False when it is no longer ours (it expired and someone took it over), in which
    case the caller must stop the work it covers."""
    with store.transaction() as tx:
        cursor = tx.execute(
            "UPDATE leases SET expires_at = ? WHERE name = ? AND owner = ?", (now + duration, name, owner)
        )
        return cursor.rowcount == 1


def release(store: RelationalStore, name: str, owner: str) -> None:
    """Give the lease up at once (only if it is still ours), so a waiting process need not wait for it
    to expire."""
    with store.transaction() as tx:
        tx.execute("DELETE FROM leases WHERE name = ? AND owner = ?", (name, owner))


def holder(store: RelationalStore, name: str, now: float) -> str | None:
    """The owner of a live lease, or None."""
    rows = store.query("SELECT owner FROM leases WHERE name = ? AND expires_at >= ?", (name, now))
    return str(rows[0][0]) if rows else None


def release_dead(store: RelationalStore) -> list[str]:
    """Give up the leases of owners on this host whose process is gone (a crash, a SIGKILL), so the
    next run need not wait out their expiry; returns the names released. An owner id names its host and
    pid (:func:`new_owner`); a lease of another host, or of a pid that is alive (perhaps reused), is left
    to expire."""
    here = socket.gethostname()
    dead = [(str(name), str(owner)) for name, owner in store.query("SELECT name, owner FROM leases")
            if _dead_here(str(owner), here)]
    if dead:
        with store.transaction() as tx:
            for name, owner in dead:
                tx.execute("DELETE FROM leases WHERE name = ? AND owner = ?", (name, owner))
    return [name for name, _ in dead]


def _dead_here(owner: str, here: str) -> bool:
    parts = owner.split(":")
    if len(parts) < 3 or ":".join(parts[:-2]) != here:
        return False
    try:
        pid = int(parts[-2])
    except ValueError:
        return False
    if pid == os.getpid():
        return False  # an engine of this process: alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists under another user (EPERM): alive
        return False
    return False
