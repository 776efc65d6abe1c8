"""One hit per fact: a fact, the episodes it was distilled from, the assistant's echo of it and exact or
near-duplicate episodes collapse into one hit, so ``k`` is not spent on repeats.

Three signals, none of them a word list:
- provenance: a distilled memory cites its episodes (``source_ids``);
- the text itself: the same normalised content;
- meaning plus form: two memories whose cosine stands far above the cosine of either to unrelated
  background sentences (the floor's z-score, so e5's crowded cosines do not matter) *and* that share
  most of their keyword weight. The agent's reply next to a turn (an echo: "got it, you are allergic
  to peanuts") needs only the similarity, because the agent restating what it was told adds nothing,
  unless it brings a figure the turn does not hold (``brings_no_figure``). The reply to a question is
  its answer, not its echo, and a question and a statement are never near-duplicates: shown in the
  answer's place, the question hid it ("What's a good whisky for a beginner?" for "A good whisky for a
  beginner is a gentle Speyside."). Only the agent's (``AGENT_ROLES``): a person's reply close to the turn it
  answers is their own testimony, often with a detail of its own (on LoCoMo, where both speakers are
  people, merging those cost 0.10 recall@10). Two statements that differ in their rare words ("allergic
  to peanuts" / "allergic to shellfish") are similar in meaning but not in form, and stay apart.

The best-ranked memory of a group keeps its place, except that a distilled memory represents its
group (it is the fact; the episodes are its evidence), and otherwise the speaker's words represent the
agent's echo of them; the others become the hit's ``sources``."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from hindsight_core.recall.floor import Baseline
from hindsight_core.recall.keyword import stem
from hindsight_core.recall.profile import is_question
from hindsight_core.recall.types import RecallHit
from hindsight_core.text.normalize import normalize
from hindsight_core.types import AGENT_ROLES, Layer

T = TypeVar("T", float, np.ndarray)


@dataclass(frozen=True)
class Sameness:
    """How to tell two memories apart (``RecallConfig``)."""

    #: z of the pair's cosine against the background: for any two memories that also share more of their
    #: rare words than they hold apart (``shares_more_than_apart``), alone for the agent's adjacent reply
    #: to a turn (an echo); ``None``: off
    duplicate_z: float | None


def brings_no_figure(reply: frozenset[str], said: frozenset[str]) -> bool:
    """Whether the agent's ``reply`` (its keyword terms) holds no figure that the turn it follows
    (``said``) does not: a number is a value (a price, a time, a date, a code). "Leasing the EV6 it is:
    429 a month for 36 months." after "Let's lease the EV6 rather than buy it." agrees and states the
    deal; folded into the turn as its echo (e5 puts the pair above the bar), the 429 was gone from the
    prompt. "25,000 dollars, noted." restates. A number may be written out: "Booked the riverside
    restaurant for Saturday at half past seven, four people." and "订好了，周六晚上七点半，四位。" were folded
    into the request they confirm, and "What time is dinner on Saturday?" got the request alone."""
    return _figures(reply) <= _figures(said)


#: Numbers written out, closed classes of the grammar as digits are: English cardinals from two ("one" is
#: as often a pronoun: "the blue one") and Chinese numerals, two in a row ("八千", "十八万", "七十") or one
#: before a measure word ("七点", "四位", "两天"; not "四川"; "一个" and "一下" are a and a bit).
_ENGLISH_NUMBERS = (
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion "
    "dozen"
)
_CHINESE_FIGURE = re.compile(
    r"[〇零一二两三四五六七八九十百千万亿]{2,}|[二两三四五六七八九十][个位名岁点块元天晚夜人次号楼层斤周年月]")


@functools.cache
def _english_numbers() -> frozenset[str]:
    """The cardinals as the keyword index stems them ("twenty" is "twenti")."""
    return frozenset(stem(word) for word in _ENGLISH_NUMBERS.split())


def _figures(terms: frozenset[str]) -> frozenset[str]:
    numbers = _english_numbers()
    return frozenset(t for t in terms
                     if any(c.isdigit() for c in t) or t in numbers or _CHINESE_FIGURE.search(t))


def shares_more_than_apart(a: frozenset[str], b: frozenset[str], idf: Callable[[str], float]) -> bool:
    """Whether two memories' terms weigh more in common than apart (their idf-weighted Jaccard is at least
    one half): the same words, near enough, said twice. A near-duplicate needs it beside a close meaning,
    and a later memory that has it repeats an older one rather than updating it. It was a fitted share
    (0.6); the comparison itself, at 0.5, changed nothing on the behaviour set, LoCoMo or LongMemEval
    with e5, and one LoCoMo question's depth-10 evidence with MiniLM (docs/benchmark-log.md)."""
    return bool(_more_in_common(sum(map(idf, a & b)), sum(map(idf, a)), sum(map(idf, b))))


def _more_in_common(shared: T, weight_a: T, weight_b: T) -> T:
    """The comparison of :func:`shares_more_than_apart` on summed weights: two numbers, or arrays of pairs."""
    union = weight_a + weight_b - shared
    return (union > 0) & (shared >= union - shared)


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
    adjacent: Callable[[Sequence[str]], np.ndarray],
    same: Sameness,
) -> list[RecallHit]:
    """``hits`` best first; returns one hit per group, best first. ``vector`` / ``terms`` give a
    memory's vector and keyword terms (``None`` when unknown: only provenance and text then apply),
    ``spread(u, text_of_u)`` the cosines of ``u`` to the background of its text's language (a pair's z
    is measured against it), ``adjacent(ids)`` which pairs of them are neighbouring turns of one session
    (a square boolean matrix)."""
    together = _Pairs(hits, vector, spread, same).together(terms, idf, adjacent)
    groups: list[list[int]] = []
    group_of: list[int] = []
    for i in range(len(hits)):
        # the first group formed that holds a hit this one is the same as
        joined = min((group_of[j] for j in np.flatnonzero(together[i, :i]).tolist()), default=None)
        if joined is None:
            joined = len(groups)
            groups.append([])
        groups[joined].append(i)
        group_of.append(joined)
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
    """Which pairs of hits are one statement, decided for every pair at once (numpy passes over the
    hits, not a Python call per pair): one cites the other, their texts are equal, or their z from the
    one matrix product of the hits reaches the bar and, unless one is the agent's adjacent echo of the
    other (``brings_no_figure``), their terms weigh more in common than apart (one product of the hits'
    term weights)."""

    def __init__(
        self, hits: Sequence[RecallHit], vector: Callable[[str], np.ndarray | None],
        spread: Callable[[np.ndarray, str], Baseline], same: Sameness,
    ) -> None:
        self.hits = hits
        self.ids = [h.memory.id for h in hits]
        self.bar = same.duplicate_z
        n = len(hits)
        self.vectors: list[np.ndarray | None] = [None] * n
        self.spreads: list[Baseline | None] = [None] * n
        #: The pairs that are one by provenance or text, whatever their meaning.
        self.given = np.zeros((n, n), dtype=bool)
        at = {mid: i for i, mid in enumerate(self.ids)}
        by_text: dict[str, list[int]] = {}
        for i, h in enumerate(hits):
            by_text.setdefault(_normalized(h.memory.content), []).append(i)
            for cited in h.memory.source_ids:
                j = at.get(cited)
                if j is not None:
                    self.given[i, j] = self.given[j, i] = True
        for equal in by_text.values():
            if len(equal) > 1:
                self.given[np.ix_(equal, equal)] = True
        #: Each pair's z from the one matrix product (-inf without both vectors), and how far from the
        #: bar it must be for the z from the two vectors (the one a decision uses) to fall on the same side.
        self.z = np.full((n, n), -np.inf)
        self.slack = np.zeros((n, n))
        if self.bar is None:
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
        spreads = [s for s in self.spreads if s is not None]  # the known hits', in order
        means = np.asarray([s.mean for s in spreads])
        stds = np.asarray([s.std for s in spreads])
        one_side = (cosines.astype(np.float64) - means[:, None]) / stds[:, None]
        self.z[np.ix_(known, known)] = np.minimum(one_side, one_side.T)
        self.slack[np.ix_(known, known)] = ROUNDING / np.minimum.outer(stds, stds)

    def together(self, terms: Callable[[str], frozenset[str] | None], idf: Callable[[str], float],
                 adjacent: Callable[[Sequence[str]], np.ndarray]) -> np.ndarray:
        """The symmetric matrix of the pairs that are one statement (its diagonal means nothing).
        ``terms`` and ``idf`` are read only for the pairs close enough in meaning."""
        out = self.given.copy()
        if self.bar is None:
            return out
        close = self.z >= self.bar
        for a, b in zip(*np.nonzero(np.triu(np.abs(self.z - self.bar) <= self.slack, 1)), strict=True):
            va, vb, sa, sb = self.vectors[a], self.vectors[b], self.spreads[a], self.spreads[b]
            assert va is not None and vb is not None and sa is not None and sb is not None
            close[a, b] = close[b, a] = min(float(sa.z(float(va @ vb))), float(sb.z(float(vb @ va)))) >= self.bar
        open_ = np.triu(close & ~out, 1)
        if not open_.any():  # most recalls: no pair close enough, nothing more to read
            return out
        asks = np.asarray([is_question(h.memory.content) for h in self.hits], dtype=bool)
        agent = np.asarray([is_agent(h.memory.role) for h in self.hits], dtype=bool)
        echo = open_ & (agent[:, None] != agent[None, :])
        if echo.any():  # the agent's echo of a turn
            echo &= adjacent(self.ids)
            for a, b in zip(*np.nonzero(echo), strict=True):
                reply, said = (a, b) if agent[a] else (b, a)
                replied, stated = terms(self.ids[reply]), terms(self.ids[said])
                # the agent's reply to a question answers it: it repeats nothing (as RecallPipeline._echoed)
                echo[a, b] = not asks[said] and (replied is None or stated is None
                                                 or brings_no_figure(replied, stated))
            out |= echo | echo.T
            open_ &= ~echo
        # a question and a statement are never near-duplicates, however close: the reply is the answer
        open_ &= asks[:, None] == asks[None, :]
        if not open_.any():
            return out
        involved = np.flatnonzero(open_.any(axis=1) | open_.any(axis=0)).tolist()
        held = {i: found for i in involved if (found := terms(self.ids[i])) is not None}
        vocabulary = {t: k for k, t in enumerate(dict.fromkeys(t for found in held.values() for t in found))}
        member = np.zeros((len(self.hits), len(vocabulary)))
        for i, found in held.items():
            member[i, [vocabulary[t] for t in found]] = 1.0
        weighted = member * np.asarray([idf(t) for t in vocabulary])
        total = weighted.sum(axis=1)
        has_terms = np.zeros(len(self.hits), dtype=bool)
        has_terms[list(held)] = True
        # shares_more_than_apart for every pair at once
        alike = (open_ & _more_in_common(weighted @ member.T, total[:, None], total[None, :])
                 & has_terms[:, None] & has_terms[None, :])
        return out | alike | alike.T


#: Normalised texts of the hits seen lately: the same memories are hits of recall after recall.
_normalized = functools.lru_cache(maxsize=8192)(normalize)


def is_agent(role: str | None) -> bool:
    """Whether ``role`` is the agent's (``AGENT_ROLES``): its restatement of a turn is an echo, a person's is not."""
    return role is not None and role.lower() in AGENT_ROLES
