"""Stage 5, the final score: ``relevance + β·importance·decay(t) + γ·frequency``.

Relevance dominates: its weight is 1, since only the ratios of the three weights order the hits, so
β and γ are in units of relevance (and ``recall.demoted_penalty`` of 1, relevance being at most 1, is a
whole relevance). Importance-weighted activation and use frequency break near-ties in favour of what
matters and what is in use, which is what makes the memory feel alive rather than a search box."""

from __future__ import annotations

import math

from hindsight_core.types import Memory


def final_score(
    memory: Memory, relevance: float, *, now_ts: float, rate: float, beta: float, gamma: float, max_access: int,
) -> tuple[float, float, float]:
    """``(score, importance·decay, frequency)``; activation is capped at 1 so a hot memory cannot
    outrun relevance."""
    decay = min(1.0, memory.activation.value_at(now_ts, rate))
    salience = (memory.importance / 5.0) * decay
    frequency = math.log1p(memory.access_count) / math.log1p(max(max_access, 1)) if max_access > 0 else 0.0
    return relevance + beta * salience + gamma * frequency, salience, frequency
