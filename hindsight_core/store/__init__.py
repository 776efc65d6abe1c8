"""The relational store: the one source of truth (DESIGN.md "Backends")."""

from hindsight_core.store.sql import RelationalStore

__all__ = ["RelationalStore"]
