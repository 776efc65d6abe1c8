"""The relational store: the one source of truth (docs/architecture.md, "Stores")."""

from hindsight_core.store.sql import RelationalStore

__all__ = ["RelationalStore"]
