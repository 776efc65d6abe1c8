"""Consolidation, decay and eviction settings (DESIGN.md "Lifecycle")."""

from __future__ import annotations

from pydantic import BaseModel


class LifecycleConfig(BaseModel):
    archive_after_days: float = 90.0
