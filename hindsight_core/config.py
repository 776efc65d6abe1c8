"""Engine configuration: one pydantic model, with sections for the parts of DESIGN.md.

Half-lives are in days; activation rates derive from them (``rate = ln 2 / half_life``)."""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_core.recall.config import RecallConfig
from hindsight_core.types import Layer

_DAY = 86_400.0


class ActivationConfig(BaseModel):
    half_life_days: dict[Layer, float | None] = Field(
        default_factory=lambda: {
            Layer.WORKING: None,
            Layer.EPISODIC: 7.0,
            Layer.SEMANTIC: 90.0,
            Layer.PROCEDURAL: 180.0,
        }
    )
    #: ``ln A_ref`` of a fresh memory is ``initial_log + importance_weight * (importance - 3)``.
    initial_log: float = 0.0
    importance_weight: float = 0.5
    #: Reinforcement: ``A_ref <- A(now) + reinforce_weight * relevance``.
    reinforce_weight: float = 1.0

    def rate(self, layer: Layer) -> float:
        """Decay rate per second; 0 for layers that do not decay."""
        half_life = self.half_life_days.get(layer)
        return 0.0 if not half_life else math.log(2) / (half_life * _DAY)


class WriteConfig(BaseModel):
    max_content_chars: int = 20_000
    #: ``role`` is a speaker label ("user", "assistant", a tool name), not content.
    max_role_chars: int = 64
    #: Metadata limits: nesting depth (JSON encoders recurse, so depth is bounded before encoding) and
    #: the size of the encoded JSON in bytes (metadata rides along with every read of the memory).
    max_metadata_depth: int = 32
    max_metadata_bytes: int = 64 * 1024
    default_importance: int = 3
    #: Token budget of ``working()`` (the session's recent turns, verbatim).
    working_budget_tokens: int = 1_000
    #: Events per transaction and per embedding batch in ``record_many``.
    batch_size: int = 64
    #: A row that fails on its own (while the rest of its batch applies) this many times is parked: kept
    #: with its error, shown in ``stats()``, skipped by drains until ``reconcile()`` retries it.
    outbox_max_attempts: int = Field(default=5, ge=1)


class HindsightConfig(BaseModel):
    activation: ActivationConfig = Field(default_factory=ActivationConfig)
    write: WriteConfig = Field(default_factory=WriteConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)
