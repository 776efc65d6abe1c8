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

from hindsight_core.recall.floor import Baseline
from hindsight_core.recall.types import RecallHit
from hindsight_core.text.normalize import normalize
from hindsight_core.types import AGENT_ROLES, Layer


@dataclass(frozen=True)
class Sameness:
    """How to tell two memories apart (``RecallConfig``)."""

    #: z of the pair's cosine against the background: for any two memories that also share more of their
    #: rare words than they hold apart (``shares_more_than_apart``), alone for the agent's adjacent reply
    #: to a turn (an echo); ``None``: off
    duplicate_z: float | None


def shares_more_than_apart(a: frozenset[str], b: frozenset[str], idf: Callable[[str], float],
                           weight_a: float | None = None, weight_b: float | None = None) -> bool:
    """Whether two memories' terms weigh more in common than apart (their idf-weighted Jaccard is at least
    one half): the same words, near enough, said twice. A near-duplicate needs it beside a close meaning,
    and a later memory that has it repeats an older one rather than updating it. It was a fitted share
    (0.6); the comparison itself, at 0.5, changed nothing on the behaviour set, LoCoMo or LongMemEval
    with e5, and one LoCoMo question's depth-10 evidence with MiniLM (docs/benchmark-log.md)."""
    shared = sum(map(idf, a & b))
    union = ((sum(map(idf, a)) if weight_a is None else weight_a)
             + (sum(map(idf, b)) if weight_b is None else weight_b) - shared)
    return union > 0 and shared >= union - shared


#: How far a pair's cosine from the one matrix product over the hits may sit below the cosine the
#: decision computes from the two vectors (the same float32 numbers summed in another order): a pair
#: is skipped only when its cosine is farther than this below what the bar asks, so skipping it
#: changes no decision.
ROUNDING = 1e-4


def collapse(
    hits: Sequence[RecallHit],
    *,
    vector: Callable[[str], np.ndarray | None],
    spread: Callable[[np.ndarray, str], Baseline],
    terms: Callable[[str], frozenset[str] | None],
    idf: Callable[[str], float],
    adjacent: Callable[[str, str], bool],
    same: Sameness,
) -> list[RecallHit]:
    """``hits`` best first; returns one hit per group, best first. ``vector`` / ``terms`` give a
    memory's vector and keyword terms (``None`` when unknown: only provenance and text then apply),
    ``spread(u, text_of_u)`` the cosines of ``u`` to the background of its text's language (a pair's z
    is measured against it), ``adjacent`` whether two memories are neighbouring turns of one session."""
    pairs = _Pairs(hits, vector, spread, terms, idf, same)
    groups: list[list[int]] = []
    for i in range(len(hits)):
        maybe = pairs.maybe[i]
        for members in groups:
            if any(pairs.same(i, j, adjacent) for j in members if maybe[j]):
                members.append(i)
                break
        else:
            groups.append([i])
    out: list[RecallHit] = []
    for members in groups:
        group = [hits[i] for i in members]
        head = next((h for h in group if h.memory.layer != Layer.EPISODIC),
                    next((h for h in group if not is_agent(h.memory.role)), group[0]))
        if head is not group[0]:
            head.score = group[0].score
        for other in group:
            if other is not head and all(s.id != other.memory.id for s in head.sources):
                head.sources.append(other.memory)
        out.append(head)
    return out


class _Pairs:
    """What the comparison of two hits reads, looked up once per hit (vector, background spread, role,
    normalised text) since every pair may be compared, and the pairs whose cosine (one product over
    the hits) reaches the lower bar: the others cannot be the same by meaning, and skip the z-scores
    and the term overlap."""

    def __init__(
        self, hits: Sequence[RecallHit], vector: Callable[[str], np.ndarray | None],
        spread: Callable[[np.ndarray, str], Baseline], terms: Callable[[str], frozenset[str] | None],
        idf: Callable[[str], float], same: Sameness,
    ) -> None:
        self.hits = hits
        self.normalized = [normalize(h.memory.content) for h in hits]
        self.agent = [is_agent(h.memory.role) for h in hits]
        self.sameness = same
        self._terms = terms
        self._known_terms: dict[int, frozenset[str] | None] = {}
        self._total: dict[int, float] = {}
        self._weights = _Weights(idf)
        n = len(hits)
        self.vectors: list[np.ndarray | None] = [None] * n
        self.spreads: list[Baseline | None] = [None] * n
        self.reachable = np.zeros((n, n), dtype=bool)
        #: The pairs :meth:`same` may find the same: one cites the other, their texts are equal, or their
        #: cosine reaches the lower bar (filled in below). Every other pair is not, and is not compared.
        self.maybe = np.zeros((n, n), dtype=bool)
        at = {h.memory.id: i for i, h in enumerate(hits)}
        by_text: dict[str, list[int]] = {}
        for i, h in enumerate(hits):
            by_text.setdefault(self.normalized[i], []).append(i)
            for cited in h.memory.source_ids:
                j = at.get(cited)
                if j is not None:
                    self.maybe[i, j] = self.maybe[j, i] = True
        for equal in by_text.values():
            if len(equal) > 1:
                self.maybe[np.ix_(equal, equal)] = True
        #: Each pair's z from the one matrix product, and how far from a bar it must be for the z from
        #: the two vectors (the one a decision uses) to fall on the same side.
        self.z = np.zeros((n, n))
        self.slack = np.full((n, n), np.inf)
        bar = same.duplicate_z
        if bar is None:
            return
        for i, h in enumerate(hits):
            v = vector(h.memory.id)
            if v is not None:
                self.vectors[i] = v
                self.spreads[i] = spread(v, h.memory.content)
        known = [i for i, v in enumerate(self.vectors) if v is not None]
        if not known:
            return
        stacked = np.stack([v for v in self.vectors if v is not None])
        cosines = stacked @ stacked.T
        # z >= bar for both directions of a pair means cosine >= mean + bar * std of both hits' spreads
        needed = np.asarray([_at_least(self.spreads[i], bar) for i in known])
        self.reachable[np.ix_(known, known)] = cosines >= np.maximum.outer(needed, needed) - ROUNDING
        self.maybe |= self.reachable
        spreads = [s for s in self.spreads if s is not None]  # the known hits', in order
        means = np.asarray([s.mean for s in spreads])
        stds = np.asarray([s.std for s in spreads])
        one_side = (cosines.astype(np.float64) - means[:, None]) / stds[:, None]
        self.z[np.ix_(known, known)] = np.minimum(one_side, one_side.T)
        self.slack[np.ix_(known, known)] = ROUNDING / np.minimum.outer(stds, stds)

    def terms_of(self, i: int) -> frozenset[str] | None:
        """Hit ``i``'s keyword terms, looked up once (a hit is compared with every group before it)."""
        if i not in self._known_terms:
            self._known_terms[i] = self._terms(self.hits[i].memory.id)
        return self._known_terms[i]

    def same(self, a: int, b: int, adjacent: Callable[[str, str], bool]) -> bool:
        ma, mb = self.hits[a].memory, self.hits[b].memory
        if mb.id in ma.source_ids or ma.id in mb.source_ids:
            return True
        if self.normalized[a] == self.normalized[b]:
            return True
        bar = self.sameness.duplicate_z
        if bar is None or not self.reachable[a, b]:
            return False
        z = float(self.z[a, b])
        if abs(z - bar) <= self.slack[a, b]:  # too close to the bar to tell
            va, vb, sa, sb = self.vectors[a], self.vectors[b], self.spreads[a], self.spreads[b]
            assert va is not None and vb is not None and sa is not None and sb is not None
            z = min(float(sa.z(float(va @ vb))), float(sb.z(float(vb @ va))))
        if z < bar:
            return False
        if self.agent[a] != self.agent[b] and adjacent(ma.id, mb.id):  # the agent's echo of a turn
            return True
        ta, tb = self.terms_of(a), self.terms_of(b)
        if ta is None or tb is None:
            return False
        return shares_more_than_apart(ta, tb, self._weights.__getitem__, self.weight_of(a, ta), self.weight_of(b, tb))

    def weight_of(self, i: int, terms: frozenset[str]) -> float:
        """Hit ``i``'s summed term weight, summed once."""
        total = self._total.get(i)
        if total is None:
            total = self._total[i] = sum(map(self._weights.__getitem__, terms))
        return total


class _Weights(dict[str, float]):
    """Each term's idf, computed the first time it is asked for; a hit of the dict costs no Python
    call, and the overlap of every pair compared sums the weights of both hits' terms."""

    def __init__(self, idf: Callable[[str], float]) -> None:
        super().__init__()
        self._idf = idf

    def __missing__(self, term: str) -> float:
        weight = self[term] = self._idf(term)
        return weight


def _at_least(spread: Baseline | None, bar: float) -> float:
    assert spread is not None
    return spread.mean + bar * spread.std


def is_agent(role: str | None) -> bool:
    """Whether ``role`` is the agent's (``AGENT_ROLES``): its restatement of a turn is an echo, a person's is not."""
    return role is not None and role.lower() in AGENT_ROLES
