"""Engine configuration: one pydantic model, :class:`HindsightConfig`, with one section per part of the
engine (activation, write, recall, lifecycle). Every section lives here, so the configuration depends on
nothing above it and every part reads its settings from one module.

Half-lives are in days; activation rates derive from them (``rate = ln 2 / half_life``). Lifecycle
activation thresholds are in log space (``ln A``), like the activation itself: ``-3.0`` means
``A < 0.05``, which an untouched episode (importance 3, half-life 7 days) reaches after about a month."""

from __future__ import annotations

import warnings
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from hindsight_core.activation.math import decay_rate
from hindsight_core.types import Layer


def fitted(default: Any, on: str, **constraints: Any) -> Any:
    """A field whose default was chosen on benchmark data (``on`` says which): together these are a model
    fitted by hand, the constants a tuning step must fit again and check on held-out folds, so they are
    marked rather than mixed unmarked with limits and switches (:func:`fitted_constants` lists them)."""
    return Field(default=default, json_schema_extra={"fitted": on}, **constraints)


def fitted_constants(model: type[BaseModel]) -> dict[str, str]:
    """The fields of ``model`` marked :func:`fitted`, each with the data its default was fitted on."""
    out: dict[str, str] = {}
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and isinstance(extra.get("fitted"), str):
            out[name] = str(extra["fitted"])
    return out


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
        return decay_rate(self.half_life_days.get(layer))


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
    batch_size: int = 256
    #: A row that fails on its own (while the rest of its batch applies) this many times is parked: kept
    #: with its error, shown in ``stats()``, skipped by drains until ``reconcile()`` retries it.
    outbox_max_attempts: int = Field(default=5, ge=1)
    #: How long a claim on outbox rows lasts (seconds): the rows an applier is working on are not applied
    #: by another process meanwhile, and a dead applier's rows wait this long before another takes them.
    #: Longer than one batch's apply (embedding included) takes.
    outbox_claim_s: float = Field(default=30.0, gt=0)


#: The temporal channel's weight before ``history_boost`` multiplied it: what a configuration that still
#: sets the boost alone meant.
_TEMPORAL_BEFORE_BOOST = 0.6

#: Fitted constants of ``RecallConfig`` that are now derived, and what replaced them.
RETIRED = {
    "supersede_z": "the bar is derived (floor.anchor_threshold); recall.supersede switches the updates",
    "collapse_overlap": "near-duplicates share more idf-weighted terms than they hold apart",
    "reply_terms": "a reply takes the evidence of the turn it answers when it reads as a bare answer "
                   "(sentence_kinds.SentenceKinds.answer)",
    "content_free_terms": "small talk is left out up to the length of the classifier's own examples "
                          "(sentence_kinds.content_free_max_terms)",
    "history_boost": "the temporal channel has members only when the query carries a history cue or a time "
                     "expression, when the boost applied: channel_weights['temporal'] is that weight (1.5, "
                     "was 0.6 x 2.5); a history_boost given is folded into it",
    "zh_to_en_z_scale": "a Chinese query's evidence for an English memory is scaled as the embedder's own "
                        "translations measure it (floor.cross_lingual_scale, on the background)",
}


class RecallConfig(BaseModel):
    default_k: int = 5
    default_budget_tokens: int = 800
    #: Candidates each channel returns (the issue asks for 20–30).
    per_channel: int = 25
    #: ``"zsum"``: scored channels standardised over the namespace and summed with the weights, set
    #: channels add their weight to their members. ``"rrf"``: reciprocal-rank fusion
    #: ``Σ weight / (rrf_k + rank)``. Both measured in docs/benchmark-log.md.
    fusion: Literal["zsum", "rrf"] = "zsum"
    rrf_k: int = 60
    #: ``recall(..., subtree=True)`` searches at most this many namespaces (a root and its children):
    #: each costs its own snapshot and index queries, and the snapshot cache holds 32. More raises
    #: ``InvalidInputError`` rather than leave some out unseen.
    max_subtree_namespaces: int = 16
    #: An engine that owns its embedded directory keeps the recall snapshot of a namespace with at least
    #: this many memories on disk (``<path>/recall-snapshots``), so the next process loads it instead of
    #: rebuilding it (about 10 s per 100k memories); smaller namespaces build in milliseconds.
    snapshot_file_min_memories: int = Field(default=2000, ge=0)
    #: The vector channel of a namespace with at most this many memories is an exact scan of the recall
    #: snapshot's vectors (one matrix-vector product) instead of an index query: below about 10-20k
    #: memories the product is the faster, and it ranks exactly what the index approximates. Such a
    #: recall does not read the vector index, so an index outage does not degrade it. In a larger
    #: namespace, a layer with at most this many memories that the index keeps in a pool shared with other
    #: namespaces (its facts while they are few) is scanned the same way beside the query of the
    #: namespace's own collection. 0: every namespace queries the index (a point-in-time recall,
    #: ``as_of``, always scans).
    exact_vector_max_memories: int = Field(default=10_000, ge=0)
    #: While a namespace's vector collection is not loaded in this process (the embedded Chroma loads a
    #: collection's HNSW index on its first query: seconds at 100k memories), the vector channel is an
    #: exact scan of the snapshot's vectors and the collection loads in the background after the
    #: recall. Off: the first recall queries the index and waits for it to load.
    scan_until_index_loaded: bool = True
    #: Weight of each channel in the fusion. The temporal channel has members only when the query carries
    #: a history cue ("上次", "last time") or a time expression ("last week"): the design's "trace words"
    #: route it in. Its weight was 0.6, multiplied by a ``history_boost`` of 2.5 exactly when it had
    #: members, so only the product was ever used: 1.5, one constant instead of two (docs/benchmark-log.md).
    channel_weights: dict[str, float] = Field(
        json_schema_extra={"fitted": "the development sets"},
        default_factory=lambda: {
            "vector": 1.0,
            "keyword": 1.0,
            "temporal": 1.5,
            "entity": 0.4,
            "profile": 1.0,
            "activation": 0.15,
        }
    )
    #: Context: a candidate lends this share of its fused score to its neighbouring turns in the session
    #: when the neighbour is another speaker's (an answer usually sits in the reply to the turn that
    #: matches the question).
    context_weight: float = fitted(0.4, "the development sets")
    #: The share lent between two consecutive turns of the same speaker (``role``): a speaker's next
    #: statement mostly stands on its own, so it takes less than a reply. On LongMemEval's user-only
    #: turns lending it the full 0.4 cost turn recall@5 0.05; 0.1 was chosen on the tune part from
    #: 0, 0.1, 0.2, 0.4 (docs/benchmark-log.md, "A context share that follows the speaker").
    #: ``context_weight`` restores the old, speaker-blind rule.
    context_same_speaker_weight: float = fitted(0.1, "LongMemEval's tune part", ge=0.0)
    #: Taken off the final score of a memory demoted on request (``Hindsight.demote``): relevance is at
    #: most 1, so it ranks below every kept memory still wanted, and is shown only when the budget has room.
    demoted_penalty: float = Field(default=1.0, ge=0.0)
    #: Taken off the final score of a starting memory (``Hindsight(starting_memories=...)``): a template's
    #: default ranks below every kept memory of the user's own and fills what room the budget has left.
    starting_penalty: float = Field(default=1.0, ge=0.0)
    #: Cross-encoder reranking: a FlagEmbedding reranker name or local path; ``None`` passes scores through.
    reranker: str | None = None
    rerank_top_n: int = 20
    #: Relevance floor (floor.py). Evidence of a candidate = how many standard deviations its cosine
    #: stands above unrelated background sentences of its language, measured from both sides and
    #: averaged (against the query's cosines to them, and against the memory's own), plus
    #: ``floor_coverage_weight`` × the share of the query's keyword weight it contains. A query returns
    #: nothing unless some candidate stands ``floor_anchor_base`` above the best that the n memories of
    #: its namespace would reach by chance (the median of the maximum of n standard normal draws,
    #: derived; less ``floor_history_relief`` with a history cue, a time expression or a question about
    #: the asker); then each candidate needs to reach chance's best.
    floor_coverage_weight: float = fitted(3.0, "the development sets")
    floor_anchor_base: float = fitted(1.47, "the development sets")
    #: A memory in the other language than the query has no memory-side z (its cross-lingual cosine is
    #: not comparable with its cosines to sentences of its own language), and the query side alone runs
    #: higher than the two-sided mean: its z is lowered by this much, which keeps such pairs at the bar
    #: they had before the memory side was added.
    floor_cross_lingual_offset: float = fitted(1.4, "the development sets")
    floor_history_relief: float = fitted(1.0, "the development sets")
    #: How many standing facts a request is offered; a question about the asker is offered one (it asks
    #: for one thing about them). An offer passes the relevance floor by its kind and is not reinforced:
    #: being offered is not evidence of use.
    standing_offers: int = 2
    #: One hit per fact (collapse.py): a distilled fact and the episodes it cites, and exact duplicates,
    #: are always one hit. Two memories whose cosine stands this many standard deviations above the
    #: background are one statement, one hit, when their idf-weighted terms weigh more in common than
    #: apart (near-duplicates, ``collapse.shares_more_than_apart``), or when one is the agent's adjacent
    #: reply (``AGENT_ROLES``) to the other, in its own words (an echo: "3000 euros for Rome, got it.").
    #: A person's reply never is an echo: on LoCoMo, merging a friend's reply into the turn it answers
    #: cost 0.10. ``None``: off.
    #: One bar for both: echoes had their own (4.0, duplicates 5.5); at 4.0 for both, nothing changed on
    #: the behaviour set, LoCoMo or LongMemEval, and 5.5 for both let an echo through.
    collapse_duplicate_z: float | None = fitted(4.0, "the development sets")
    #: Recall-time updates (supersede.py): a kept memory is superseded by a newer candidate of the same
    #: speaker, said in a later session, whose z to it (mean of both directions against the background,
    #: each against its own language) reaches the best of the namespace's n memories by chance
    #: (``floor.chance_best``), each the other's closest among that speaker's memories of other
    #: conversations in time order, that does not repeat it (``collapse.shares_more_than_apart``) and
    #: (``supersede_needs_change``) states a change. The same test of "one attribute" lets the user's own
    #: word replace a starting memory (recall and consolidation) and come before a shared one: there the
    #: pair must anchor as a query's best candidate does, ``floor_anchor_base`` above the best of the m
    #: memories compared by chance (``floor.anchor_threshold``). Every bar is derived; this was the
    #: fitted ``supersede_z`` (2.7). Off: no recall-time update, and starting and shared memories never
    #: yield.
    supersede: bool = True

    #: The newer memory must state a change (``sentence_kinds.SentenceKinds.change``, learned from
    #: examples, no verb list): a later remark on the same topic that changes nothing ("My sister lives in
    #: Hamburg" after "I live in Munich") is not an update. Without it, updates cost LoCoMo dev held-out
    #: recall@10 0.016; with it 0.002 (docs/benchmark-log.md).
    supersede_needs_change: bool = True
    #: Each injected memory is cut to this many tokens; each cited source excerpt to fewer.
    max_memory_tokens: int = 160
    source_excerpt_tokens: int = 40
    max_sources: int = 2
    #: Reinforcement of injected memories is buffered and flushed in one transaction per batch (and one
    #: Redis ZADD per namespace and layer), off the caller's thread, and on ``close()``. A crash loses the
    #: reinforcement and recall-log rows of the recalls not yet flushed (at most this many, or
    #: ``reinforce_max_age_s`` of them), never a memory. Flushing after every recall costs a chat turn
    #: about 4 % more CPU and one more Redis command (docs/benchmarks.md).
    reinforce_batch: int = 64
    reinforce_max_age_s: float = 30.0
    #: Write the recall log (query, candidates per channel, injected ids, scores).
    log: bool = True
    #: Run ``warm_up()`` in a background thread when the engine opens, so the first recall does not load
    #: the models (off by default: an engine that only writes, or a CLI command, would pay for nothing).
    warm_up_on_open: bool = False

    @model_validator(mode="before")
    @classmethod
    def _retired_constants(cls, data: Any) -> Any:
        """Fitted constants now derived: a configuration that sets one is told so, not ignored unseen.
        ``supersede_z`` (2.7, now ``floor.anchor_threshold``) turned recall-time updates off with
        ``None``, which still does; ``collapse_overlap`` (0.6) is now ``collapse.shares_more_than_apart``;
        ``content_free_terms`` (3) is ``sentence_kinds.content_free_max_terms``; ``reply_terms`` (2) is the
        classifier ``SentenceKinds.answer``; ``zh_to_en_z_scale`` (1.4) is ``floor.cross_lingual_scale``;
        ``history_boost`` (2.5) multiplied the temporal channel's
        weight whenever that channel had members, and is folded into ``channel_weights["temporal"]``
        (the old default weight, 0.6, unless the configuration gives one)."""
        if not isinstance(data, dict) or not data.keys() & RETIRED:
            return data
        data = dict(data)
        if "supersede_z" in data and data["supersede_z"] is None:
            data.pop("supersede_z")
            data.setdefault("supersede", False)
        if "history_boost" in data:  # the weight the temporal channel had with the boost: the same ranking
            weights = dict(data.get("channel_weights") or cls.model_fields["channel_weights"].get_default(
                call_default_factory=True))
            given = "temporal" in (data.get("channel_weights") or {})
            before = weights["temporal"] if given else _TEMPORAL_BEFORE_BOOST
            weights["temporal"] = before * float(data["history_boost"])
            data["channel_weights"] = weights
        for name in data.keys() & RETIRED:
            data.pop(name)
            warnings.warn(f"recall.{name} is gone: {RETIRED[name]}", DeprecationWarning, stacklevel=2)
        return data


class LifecycleConfig(BaseModel):
    # -- consolidation -------------------------------------------------------------------------------
    #: The background worker consolidates a session after this many new episodes (0 turns this off) ...
    consolidate_every: int = Field(default=50, ge=0)
    #: ... or once the session got no new episode for this many seconds: the adapters' conversations
    #: have no end call, so a session gone quiet is a session that ended (``end_session`` ends one at
    #: once). Counted in this process; ``hindsight worker`` has its own wait (``--max-wait``). 0: off.
    consolidate_idle_s: float = Field(default=600.0, ge=0.0)
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
    #: ``demote()`` lowers a memory's ``ln A(now)`` to at most this: below ``cold_log_activation``, so the
    #: sweep cools it once it has been idle ``cold_idle_days`` and archives it after ``archive_after_days``.
    demoted_log_activation: float = -6.0
    #: Directory (under the engine's data directory) of the per-namespace JSONL archives.
    archive_dir: str = "archive"


class HindsightConfig(BaseModel):
    activation: ActivationConfig = Field(default_factory=ActivationConfig)
    write: WriteConfig = Field(default_factory=WriteConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)
