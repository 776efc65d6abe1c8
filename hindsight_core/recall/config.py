"""Recall settings: a section of the one engine configuration, :mod:`hindsight_core.config`."""

from hindsight_core.config import RecallConfig

__all__ = ["RecallConfig"]
