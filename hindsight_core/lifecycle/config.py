"""Consolidation, decay and eviction settings: a section of the one engine configuration,
:mod:`hindsight_core.config`."""

from hindsight_core.config import LifecycleConfig

__all__ = ["LifecycleConfig"]
