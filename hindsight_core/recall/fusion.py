"""Stage 3, fusion: standardised score sums or weighted reciprocal-rank fusion of the channels.

RRF uses ranks, not raw scores, so channels with incomparable scales (cosine, BM25, log activation)
combine without calibration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hindsight_core.recall.moments import Spread

if TYPE_CHECKING:
    from hindsight_core.recall.corpus import Corpus

Ranked = list[tuple[str, float]]


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


def candidate_pool(rankings: Mapping[str, Ranked], corpus: Corpus) -> list[int]:
    """Every memory some channel proposed, plus its neighbouring turns (context) of its own layer, in
    the order the channels propose them (each member, then its previous and next turn), each once."""
    index = corpus.position
    proposed = dict.fromkeys(mid for ranked in rankings.values() for mid, _ in ranked)
    members = np.asarray([i for i in map(index.get, proposed) if i is not None], dtype=np.int64)
    if not members.size:
        return []
    # each member followed by its previous and next turn (-1: none)
    placed = np.stack([members, corpus.previous[members], corpus.following[members]], axis=1)
    if len(corpus.layers) > 1:  # a neighbour of another layer is no context
        layer_at = corpus.memories.layer_at
        for row in placed:
            own = layer_at(int(row[0]))
            for c in (1, 2):
                if row[c] >= 0 and layer_at(int(row[c])) != own:
                    row[c] = -1
    flat = placed.ravel()
    flat = flat[flat >= 0]
    _, first = np.unique(flat, return_index=True)
    return flat[np.sort(first)].tolist()


def with_neighbours(pool: Sequence[int], previous: np.ndarray, following: np.ndarray) -> np.ndarray:
    """``pool`` and each member's previous and next turn, ascending: the rows ``zsum`` must score for the
    context term of every member of ``pool`` to be exact."""
    members = np.asarray(pool, dtype=np.int64)
    rows = np.concatenate([members, previous[members], following[members]])
    return np.unique(rows[rows >= 0])


def agreement(evidence: np.ndarray) -> float:
    """How much a set channel's members agree with the scored channels, in [0, 1]: their mean
    standardised evidence, clipped. A set whose members look like the namespace's average memory
    (a time window over a busy week, a name that every turn carries) tells nothing about this query,
    and adding its full weight to every member would bury the memories that match; a set of matching
    memories keeps its weight. This adapts the set channels to the query and the namespace instead of
    fixing their weights on one dataset."""
    if not evidence.size:
        return 0.0
    return float(min(max(float(evidence.mean()), 0.0), 1.0))


@dataclass(frozen=True)
class Scored:
    """A scored channel's values on the rows fused, and its spread over the whole namespace."""

    values: np.ndarray
    spread: Spread


def zsum(
    scores: Mapping[str, Scored],
    membership: Mapping[str, Sequence[int]],
    weights: Mapping[str, float],
    rows: np.ndarray,
    *,
    context: float,
    previous: np.ndarray,
    following: np.ndarray,
    reply: np.ndarray | None = None,
    same_speaker: float | None = None,
    unconditional: frozenset[str] = frozenset({"profile"}),
) -> np.ndarray:
    """Score fusion: each scored channel (cosine, BM25) standardised over the namespace, weighted and
    summed; each set channel (temporal, entity, activation) adds its weight, times its ``agreement``
    with the scored channels, to its members; ``unconditional`` ones (standing facts, which bridge
    what similarity cannot) their full weight. Then every row of ``rows`` adds ``context`` times the
    better of its neighbours' scores (``context_share``): ``context`` across a change of speaker
    (``reply``: a row's previous turn was said by someone else), ``same_speaker`` (``None``: the same
    as ``context``) between two turns of one speaker.

    Standardising keeps the magnitudes RRF throws away: a turn that matches the query's rare words
    far better than any other should not tie with one that barely made the list. On LoCoMo this beats
    RRF by 0.04–0.05 evidence recall@10 (docs/benchmark-log.md).

    Only ``rows`` are fused (snapshot positions, ascending; the result is aligned with them): each
    scored channel brings its values there and its namespace-wide spread (moments.py), so the cost is
    the candidates', not the namespace's. ``rows`` must hold every set channel member, and a row's
    context term is exact when its neighbours (``previous`` / ``following``: snapshot positions, -1
    for none) are among ``rows`` too (``with_neighbours``)."""
    fused = np.zeros(len(rows), dtype=np.float64)
    total = 0.0
    for name, scored in scores.items():
        weight = weights.get(name, 0.0)
        if weight:
            fused += weight * scored.spread.standardise(scored.values)
            total += weight
    # what the query's own words and meaning say of each memory, in standard deviations
    evidence = fused / total if total > 0 else fused
    for name, members in membership.items():
        if name in scores:
            continue
        weight = weights.get(name, 0.0)
        if weight and members:
            index = np.searchsorted(rows, np.asarray(members, dtype=np.int64))
            share = 1.0 if name in unconditional else agreement(evidence[index])
            fused[index] += weight * share
    return fused + context_share(fused, rows, previous, following, reply, context,
                                 context if same_speaker is None else same_speaker)


def context_share(
    fused: np.ndarray, rows: np.ndarray, previous: np.ndarray, following: np.ndarray, reply: np.ndarray | None,
    across: float, same: float,
) -> np.ndarray:
    """What each of ``rows`` takes from its neighbouring turns: the best of share × neighbour's score.

    The share is ``across`` between turns of different speakers and ``same`` between two turns of one
    speaker (``reply`` tells which; without it every pair counts as across). On LoCoMo, two people
    chatting, an answer sits in the reply to the turn that matches the question ("What did you name the
    puppy?" / "Biscuit."), and lending that reply its neighbour's score is worth about +0.05 recall@10.
    A speaker's own next turn is no such reply: on LongMemEval, where only the user's self-contained
    turns to an assistant are memories, every neighbour is the same speaker's next request, and lending
    to it cost turn-level recall@5 (0.82 against 0.87 for e5 alone): it pushes a match's neighbours
    above matches from other sessions (docs/benchmark-log.md, "A context share that follows the speaker")."""
    if not len(rows) or (across <= 0 and same <= 0):
        return np.zeros(len(rows), dtype=np.float64)
    padded = np.append(fused, -np.inf)
    before, after = previous[rows], following[rows]
    if reply is None:
        share_before = np.full(len(rows), across)
        share_after = share_before
    else:
        share_before = np.where(reply[rows], across, same)
        share_after = np.where(reply[np.maximum(after, 0)], across, same)
    lent = []
    for neighbour, share in ((padded[_local(rows, before)], share_before), (padded[_local(rows, after)], share_after)):
        with np.errstate(invalid="ignore"):  # -inf × 0 where a share is 0 and no neighbour is fused
            lent.append(np.where(np.isfinite(neighbour) & (share > 0), share * neighbour, -np.inf))
    best = np.maximum(lent[0], lent[1])
    return np.where(np.isfinite(best), best, 0.0)


def _local(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Where each of ``positions`` sits in ``rows``; ``len(rows)`` (the padding) for -1 or a row not fused."""
    at = np.searchsorted(rows, positions)
    clipped = np.minimum(at, len(rows) - 1)
    return np.where((positions >= 0) & (rows[clipped] == positions), clipped, len(rows))
