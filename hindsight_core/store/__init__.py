"""The relational store: the one source of truth (``docs/architecture.md`` "Stores").

``store/sql.py`` holds the connection plumbing and the memory, edge, embedding and outbox operations;
the other tables each have a module of operations (``transcripts``, ``recall_log``, ``jobs``,
``activation``, ``leases``, ``erase``, ``demotions``). All of them run on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from hindsight_core.errors import InvalidInputError
from hindsight_core.store.sql import RelationalStore

__all__ = ["RelationalStore", "open_store"]


def open_store(location: str | Path) -> RelationalStore:
    """The store at ``location``: a ``postgresql://`` (or ``postgres://``) URL opens PostgreSQL (the
    ``postgres`` extra), ``sqlite:///<path>`` or a plain path opens SQLite."""
    text = str(location)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("postgresql", "postgres"):
        from hindsight_core.store.postgres import PostgresStore

        return PostgresStore(text)
    if scheme == "sqlite":
        return RelationalStore(text.split("://", 1)[1].removeprefix("/") or ":memory:")
    if scheme:
        raise InvalidInputError(f"database URL scheme {scheme!r} is not supported (postgresql:// or sqlite:///)")
    return RelationalStore(Path(text))
