"""One hit per fact: a fact, the episodes it was distilled from, the assistant's echo of it and exact or
near-duplicate episodes collapse into one hit, so ``k`` is not spent on repeats.

Three signals, none of them a word list:
- provenance: a distilled memory cites its episodes (``source_ids``);
- the text itself: the same normalised content;
- meaning plus form: two memories whose cosine stands far above the cosine of either to unrelated
  background sentences (the floor's z-score, so e5's crowded cosines do not matter) *and* that share
  most of their keyword weight. The agent's reply next to a turn (an echo: "got it, you are allergic
  to peanuts") needs only the similarity, because the agent restating what it was told adds nothing.
  Only the agent's (``AGENT_ROLES``): a person's reply close to the turn it answers is their own
  testimony, often with a detail of its own (on LoCoMo, where both speakers are people, merging those
  cost 0.10 recall@10). Two statements that differ in their rare words ("allergic to peanuts" / "allergic to
  shellfish") are similar in meaning but not in form, and stay apart.

The best-ranked memory of a group keeps its place, except that a distilled memory represents its
group (it is the fact; the episodes are its evidence), and otherwise the speaker's words represent the
agent's echo of them; the others become the hit's ``sources``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hindsight_core.recall.types import RecallHit
from hindsight_core.text.normalize import normalize
from hindsight_core.types import AGENT_ROLES, Layer


@dataclass(frozen=True)
class Sameness:
    """How to tell two memories apart (``RecallConfig``)."""

    #: z of the pair's cosine against the background for adjacent turns (echoes); ``None``: off
    echo_z: float | None
    #: z for any two memories, together with ``overlap``; ``None``: off
    duplicate_z: float | None
    #: idf-weighted share of the two memories' distinct terms they have in common
    overlap: float


def weighted_overlap(a: frozenset[str], b: frozenset[str], idf: Callable[[str], float]) -> float:
    """idf-weighted Jaccard of two term sets: rare shared words count, common ones barely."""
    union = a | b
    if not union:
        return 0.0
    total = sum(idf(t) for t in union)
    return sum(idf(t) for t in a & b) / total if total > 0 else 0.0


def collapse(
    hits: Sequence[RecallHit],
    *,
    vector: Callable[[str], np.ndarray | None],
    pair_z: Callable[[np.ndarray, np.ndarray, str], float],
    terms: Callable[[str], frozenset[str] | None],
    idf: Callable[[str], float],
    adjacent: Callable[[str, str], bool],
    same: Sameness,
) -> list[RecallHit]:
    """``hits`` best first; returns one hit per group, best first. ``vector`` / ``terms`` give a
    memory's vector and keyword terms (``None`` when unknown: only provenance and text then apply),
    ``pair_z(u, v, text_of_u)`` the background z of their cosine, ``adjacent`` whether two memories are
    neighbouring turns of one session."""
    # every pair of hits may be compared: what is read of one memory or term is computed once
    normalized = {h.memory.id: normalize(h.memory.content) for h in hits}
    weights: dict[str, float] = {}

    def idf_once(term: str) -> float:
        weight = weights.get(term)
        if weight is None:
            weight = weights[term] = idf(term)
        return weight

    groups: list[list[RecallHit]] = []
    for hit in hits:
        for group in groups:
            if any(_same(hit, other, normalized, vector, pair_z, terms, idf_once, adjacent, same) for other in group):
                group.append(hit)
                break
        else:
            groups.append([hit])
    out: list[RecallHit] = []
    for group in groups:
        head = next((h for h in group if h.memory.layer != Layer.EPISODIC),
                    next((h for h in group if not _is_agent(h.memory.role)), group[0]))
        if head is not group[0]:
            head.score = group[0].score
        for other in group:
            if other is not head and all(s.id != other.memory.id for s in head.sources):
                head.sources.append(other.memory)
        out.append(head)
    return out


def _same(
    a: RecallHit, b: RecallHit, normalized: dict[str, str], vector: Callable[[str], np.ndarray | None],
    pair_z: Callable[[np.ndarray, np.ndarray, str], float], terms: Callable[[str], frozenset[str] | None],
    idf: Callable[[str], float], adjacent: Callable[[str, str], bool], same: Sameness,
) -> bool:
    ma, mb = a.memory, b.memory
    if mb.id in ma.source_ids or ma.id in mb.source_ids:
        return True
    if normalized[ma.id] == normalized[mb.id]:
        return True
    if same.echo_z is None and same.duplicate_z is None:
        return False
    va, vb = vector(ma.id), vector(mb.id)
    if va is None or vb is None:
        return False
    z = min(pair_z(va, vb, ma.content), pair_z(vb, va, mb.content))
    echo = _is_agent(ma.role) != _is_agent(mb.role)
    if same.echo_z is not None and z >= same.echo_z and echo and adjacent(ma.id, mb.id):
        return True
    if same.duplicate_z is None or z < same.duplicate_z:
        return False
    ta, tb = terms(ma.id), terms(mb.id)
    return ta is not None and tb is not None and weighted_overlap(ta, tb, idf) >= same.overlap


def _is_agent(role: str | None) -> bool:
    return role is not None and role.lower() in AGENT_ROLES
