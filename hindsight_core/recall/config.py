"""Recall pipeline settings (DESIGN.md "Recall")."""

from __future__ import annotations

from pydantic import BaseModel


class RecallConfig(BaseModel):
    default_k: int = 5
    default_budget_tokens: int = 800
