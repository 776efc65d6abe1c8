"""What a recall did on the way to its answer: ``recall(..., explain=True)`` fills ``RecallResult.trace``.

An operator asking "why was this memory injected, and why not that one" needs every stage's view, not
just the hits: each channel's ranked candidates, the fused order, the relevance floor's evidence and
verdict per candidate, and the final scores including the ones the budget dropped. Pure pydantic, built
only when asked, so a normal recall pays nothing for it."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TraceCandidate(BaseModel):
    """One candidate in a ranked list (a channel's, or the fusion's), rank 1 first."""

    id: str
    rank: int
    score: float


class FloorDecision(BaseModel):
    """The floor's evidence for one fused candidate and whether it was kept."""

    id: str
    #: Similarity to the query in standard deviations above the query's unrelated background.
    z: float
    #: Share of the query's keyword weight the candidate contains.
    coverage: float
    #: ``z + floor_coverage_weight * coverage``: what is compared with the bars.
    strength: float
    in_window: bool = False
    standing: bool = False
    rerank: float | None = None
    kept: bool


class FinalScore(BaseModel):
    """A candidate that passed the floor: its relevance, final score, and whether it reached the prompt
    (``False``: dropped by ``k`` or the token budget)."""

    id: str
    relevance: float
    score: float
    injected: bool


class RecallTrace(BaseModel):
    corpus_size: int = 0
    #: The query itself is small talk ("Thanks again", "ok cool", "好的谢谢": the content-free classifier,
    #: ``RecallPipeline._small_talk``): nothing was searched, so the rest of the trace is empty.
    small_talk: bool = False
    #: Per channel, its ranked candidates (``vector``, ``keyword``, ``temporal``, ``entity``, ``profile``,
    #: ``activation``).
    channels: dict[str, list[TraceCandidate]] = Field(default_factory=dict)
    #: Channel weights (``recall.channel_weights``).
    weights: dict[str, float] = Field(default_factory=dict)
    #: ``"zsum"`` or ``"rrf"``.
    fusion: str = ""
    #: The fused candidates that went on to the floor, best first, after superseded ones handed their
    #: place to their successors.
    fused: list[TraceCandidate] = Field(default_factory=list)
    #: ``{successor id: superseded id}`` for those hand-overs.
    replaced: dict[str, str] = Field(default_factory=dict)
    #: ``{older id: newer id}``: candidates that handed their place to a newer value at recall time (a
    #: recall-time update, or a starting memory yielding to the user's own word); not in ``fused``.
    updated: dict[str, str] = Field(default_factory=dict)
    #: Reranker scores, when a reranker is configured.
    reranked: dict[str, float] = Field(default_factory=dict)
    #: The evidence some candidate must reach for the query to count as answerable at all.
    anchor_bar: float = 0.0
    #: The evidence each candidate must reach to be kept once the query is anchored.
    keep_bar: float = 0.0
    anchored: bool = False
    floor: list[FloorDecision] = Field(default_factory=list)
    #: Kept candidates by final score, best first.
    final: list[FinalScore] = Field(default_factory=list)
    #: ``{candidate id: id of the hit it was folded into}``: kept candidates collapsed into another hit as
    #: the same fact (collapse.py); they reach the prompt only as that hit's sources, if it is injected.
    folded: dict[str, str] = Field(default_factory=dict)
