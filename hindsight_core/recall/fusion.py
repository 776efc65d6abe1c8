"""Stage 3, fusion: weighted reciprocal-rank fusion, and the routing that sets the weights.

RRF uses ranks, not raw scores, so channels with incomparable scales (cosine, BM25, log activation)
combine without calibration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hindsight_core.recall.types import QueryAnalysis

Ranked = list[tuple[str, float]]


def route(weights: Mapping[str, float], analysis: QueryAnalysis, history_boost: float) -> dict[str, float]:
    """History cues and time expressions raise the temporal side (the design's "trace words")."""
    routed = dict(weights)
    if analysis.history_cues or analysis.time_window is not None:
        routed["temporal"] = routed.get("temporal", 0.0) * history_boost
    return routed


def rrf(rankings: Mapping[str, Ranked], weights: Mapping[str, float], k: int = 60) -> dict[str, float]:
    fused: dict[str, float] = {}
    for channel, ranked in rankings.items():
        weight = weights.get(channel, 0.0)
        if weight <= 0:
            continue
        for rank, (memory_id, _) in enumerate(ranked, start=1):
            fused[memory_id] = fused.get(memory_id, 0.0) + weight / (k + rank)
    return fused


def spread_to_neighbours(
    fused: Mapping[str, float], neighbours: Mapping[str, Sequence[str]], share: float
) -> dict[str, float]:
    """Each candidate lends ``share`` of its score to its neighbouring turns: in a conversation the
    answer often sits right after the turn that matches the question."""
    if share <= 0:
        return dict(fused)
    out = dict(fused)
    for memory_id, score in fused.items():
        for other in neighbours.get(memory_id, ()):
            out[other] = out.get(other, 0.0) + share * score
    return out
