"""Why each candidate of a recall was or was not injected, in plain words.

The one wording the ``hindsight recall`` command and the inspector's recall playground share, read off
a result (``recall(..., explain=True)`` for the candidates that did not make it; without a trace only
the hits are known). A candidate is, in this order of precedence:

* **injected**: one of the hits, in the prompt;
* **folded into** another hit: collapsed into it as the same fact (collapse.py); it reaches the prompt
  only as that hit's source, and only if that hit is injected;
* **superseded by** a newer memory that took its place (a stored supersession, or a recall-time update);
* **below the relevance floor**: its evidence on the query did not reach the floor's bar;
* **over k or the token budget**: kept by the floor, but the prompt was full;
* **not considered**: a channel found it, but it ranked too low in fusion to reach the floor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from hindsight_core.recall.types import RecallResult


class Outcome(StrEnum):
    INJECTED = "injected"
    FOLDED = "folded"
    SUPERSEDED = "superseded"
    BELOW_FLOOR = "below_floor"
    OVER_LIMIT = "over_limit"
    NOT_CONSIDERED = "not_considered"


#: The plain words for each outcome; ``folded`` and ``superseded`` are followed by the other memory.
PHRASES: dict[Outcome, str] = {
    Outcome.INJECTED: "injected",
    Outcome.FOLDED: "folded into",
    Outcome.SUPERSEDED: "superseded by",
    Outcome.BELOW_FLOOR: "below the relevance floor",
    Outcome.OVER_LIMIT: "over k or the token budget",
    Outcome.NOT_CONSIDERED: "ranked too low in fusion to be considered",
}


@dataclass(frozen=True)
class Verdict:
    """One candidate's fate: ``other`` is the hit it was folded into or the memory that superseded it."""

    id: str
    outcome: Outcome
    other: str | None = None

    @property
    def injected(self) -> bool:
        return self.outcome is Outcome.INJECTED

    @property
    def phrase(self) -> str:
        return PHRASES[self.outcome]

    def words(self, name: Callable[[str], str] = str) -> str:
        """The verdict as a phrase, ``name`` naming the other memory (its id by default)."""
        return self.phrase if self.other is None else f"{self.phrase} {name(self.other)}"

    def as_dict(self) -> dict[str, str | None]:
        return {"id": self.id, "outcome": self.outcome.value, "other": self.other, "why": self.words()}


def verdicts(result: RecallResult) -> list[Verdict]:
    """Every candidate of ``result`` with its verdict: the hits in order, then the other candidates in
    fused order, then those superseded, then those only a channel found (best channel rank first)."""
    hits = [h.memory.id for h in result.hits]
    shown = set(hits)
    folded: dict[str, str] = {}
    superseded: dict[str, str] = {c.superseded.id: c.successor.id for c in result.conflicts}
    refused: set[str] = set()
    over: set[str] = set()
    order: list[str] = list(hits)
    trace = result.trace
    if trace is not None:
        folded.update(trace.folded)
        superseded.update({old: new for new, old in trace.replaced.items()})
        superseded.update(trace.updated)
        refused = {d.id for d in trace.floor if not d.kept}
        over = {f.id for f in trace.final if not f.injected}
        order += [c.id for c in trace.fused]
        order += list(superseded)
        channel_ranks: dict[str, int] = {}
        for ranked in trace.channels.values():
            for c in ranked:
                channel_ranks[c.id] = min(c.rank, channel_ranks.get(c.id, c.rank))
        order += sorted(channel_ranks, key=lambda mid: channel_ranks[mid])
    out: list[Verdict] = []
    for mid in dict.fromkeys(order):
        if mid in shown:
            out.append(Verdict(mid, Outcome.INJECTED))
        elif mid in folded:
            out.append(Verdict(mid, Outcome.FOLDED, folded[mid]))
        elif mid in superseded:
            out.append(Verdict(mid, Outcome.SUPERSEDED, superseded[mid]))
        elif mid in refused:
            out.append(Verdict(mid, Outcome.BELOW_FLOOR))
        elif mid in over:
            out.append(Verdict(mid, Outcome.OVER_LIMIT))
        else:
            out.append(Verdict(mid, Outcome.NOT_CONSIDERED))
    return out


__all__ = ["PHRASES", "Outcome", "Verdict", "verdicts"]
