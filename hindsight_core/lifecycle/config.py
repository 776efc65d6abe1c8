"""Consolidation, decay and eviction settings (DESIGN.md "Lifecycle").

Activation thresholds are in log space (``ln A``), like the activation itself: ``-3.0`` means
``A < 0.05``, which an untouched episode (importance 3, half-life 7 days) reaches after about a month."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LifecycleConfig(BaseModel):
    # -- consolidation -------------------------------------------------------------------------------
    #: The background worker consolidates a session after this many new episodes (0 turns it off).
    consolidate_every: int = Field(default=50, ge=0)
    #: Cost cap: episodes per extractor call (one LLM prompt per batch).
    batch_episodes: int = Field(default=40, ge=1)
    #: Cost cap for LLM extractors: calls per minute across the engine (retries count).
    llm_calls_per_minute: int = Field(default=30, ge=1)
    #: How many times an invalid LLM reply is sent back with its validation error.
    llm_max_retries: int = Field(default=2, ge=0)
    #: Same kind and cosine at or above this → the same memory (reinforced, not duplicated).
    #: multilingual-e5 puts unrelated short facts around 0.85-0.95, so this sits high.
    near_duplicate_threshold: float = Field(default=0.97, gt=0.0, le=1.0)
    #: Activation factor applied to episodes once they are distilled (they stay, but weigh less).
    consolidated_episode_factor: float = Field(default=0.5, gt=0.0, le=1.0)
    #: Activation factor applied to a memory when a newer one supersedes it.
    superseded_factor: float = Field(default=0.3, gt=0.0, le=1.0)
    #: ``A_ref <- A(now) + reinforce_weight`` when a duplicate is merged into a memory.
    reinforce_weight: float = Field(default=0.5, ge=0.0)
    #: ``state`` memories ("I'm learning to swim") expire this long after they were stated.
    state_ttl_days: float = Field(default=30.0, gt=0.0)
    #: Consolidating a namespace holds a lease in the relational store for this long, renewed between
    #: batches, so two processes never distill the same episodes; a process that dies mid-job is taken
    #: over once its lease runs out. It must outlast one batch (one LLM call with its retries).
    consolidation_lease_s: float = Field(default=60.0, gt=0.0)
    #: How long ``consolidate()`` waits for another process's lease on the namespace before returning
    #: ``status="busy"``; the background worker does not wait.
    consolidation_wait_s: float = Field(default=30.0, ge=0.0)
    # -- procedures -----------------------------------------------------------------------------------
    procedure_initial_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    #: ``feedback()`` moves confidence this share of the way towards 1 (success) or 0 (failure).
    procedure_learning_rate: float = Field(default=0.2, gt=0.0, le=1.0)
    #: A procedure whose confidence falls below this goes cold (no longer offered by recall).
    procedure_min_confidence: float = Field(default=0.15, ge=0.0, le=1.0)
    # -- decay and eviction ---------------------------------------------------------------------------
    #: ``sweep()`` cools memories whose ``ln A(now)`` is below this ...
    cold_log_activation: float = -3.0
    #: ... and that nobody touched for this long.
    cold_idle_days: float = Field(default=30.0, ge=0.0)
    #: Cold memories idle longer than this are written to the JSONL archive and deleted.
    archive_after_days: float = Field(default=90.0, ge=0.0)
    #: Directory (under the engine's data directory) of the per-namespace JSONL archives.
    archive_dir: str = "archive"
