"""Recall pipeline settings (DESIGN.md "Recall")."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RecallConfig(BaseModel):
    default_k: int = 5
    default_budget_tokens: int = 800
    #: Candidates each channel returns (the issue asks for 20–30).
    per_channel: int = 25
    #: ``"zsum"``: scored channels standardised over the namespace and summed with the weights, set
    #: channels add their weight to their members. ``"rrf"``: reciprocal-rank fusion
    #: ``Σ weight / (rrf_k + rank)``. Both measured in docs/benchmarks.md.
    fusion: Literal["zsum", "rrf"] = "zsum"
    rrf_k: int = 60
    channel_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "vector": 1.0,
            "keyword": 1.0,
            "temporal": 0.6,
            "entity": 0.4,
            "profile": 1.0,
            "activation": 0.15,
        }
    )
    #: Multiplier of the temporal channel's weight when the query carries a history cue ("上次") or a
    #: time expression ("last week"): the "trace word" routing of the design.
    history_boost: float = 2.5
    #: With a history cue, the temporal channel looks at this many of the namespace's latest memories.
    recent_pool: int = 40
    #: Context: a candidate lends this share of its fused score to its neighbouring turns in the session
    #: (an answer usually sits next to the turn that matches the question).
    context_weight: float = 0.4
    #: Final score ``alpha·relevance + beta·importance·decay + gamma·frequency``.
    alpha: float = 1.0
    beta: float = 0.1
    gamma: float = 0.05
    #: Cross-encoder reranking: a FlagEmbedding reranker name or local path; ``None`` passes scores through.
    reranker: str | None = None
    rerank_top_n: int = 20
    #: Relevance floor (floor.py). Evidence of a candidate = how many standard deviations its cosine
    #: stands above the query's cosines to unrelated background sentences of its language, plus
    #: ``floor_coverage_weight`` × the share of the query's keyword weight it contains. A query returns
    #: nothing unless some candidate reaches ``floor_anchor_base + floor_anchor_spread·sqrt(2 ln n)``
    #: for a namespace of n memories (less ``floor_history_relief`` with a history cue or a time
    #: expression); then each candidate needs that bar less ``floor_keep_margin``.
    floor_coverage_weight: float = 3.0
    floor_anchor_base: float = 2.0
    floor_anchor_spread: float = 1.1
    #: multilingual-e5-small scores a Chinese query against an English memory lower than the same pair
    #: in one language (an English query against a Chinese memory is not affected): measured ×1.4–1.8
    #: on translated pairs, so such z-scores are scaled by this factor.
    zh_to_en_z_scale: float = 1.4
    floor_history_relief: float = 1.0
    floor_keep_margin: float = 2.0
    #: A query is inside a standing fact's domain (profile.py) when its cosine to one of the domain's
    #: prototype requests stands this many standard deviations above the background.
    domain_z: float = 4.5
    #: One hit per fact (collapse.py): an adjacent reply whose cosine to a turn stands this many standard
    #: deviations above the background is an echo of it; any two memories are duplicates at
    #: ``collapse_duplicate_z`` when they also share ``collapse_overlap`` of their idf-weighted terms.
    collapse_echo_z: float = 5.5
    collapse_duplicate_z: float = 5.5
    collapse_overlap: float = 0.6
    #: Each injected memory is cut to this many tokens; each cited source excerpt to fewer.
    max_memory_tokens: int = 160
    source_excerpt_tokens: int = 40
    max_sources: int = 2
    #: Reinforcement of injected memories is buffered and flushed in one transaction per batch.
    reinforce_batch: int = 64
    reinforce_max_age_s: float = 30.0
    #: Write the recall log (query, candidates per channel, injected ids, scores).
    log: bool = True
