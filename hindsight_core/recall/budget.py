"""Stage 9, the token budget: pack by score, counting tokens on exactly the text that is injected."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hindsight_core.recall.types import PROMPT_HEADER as HEADER
from hindsight_core.recall.types import RecallHit
from hindsight_core.text.tokens import TokenCounter


def pack(
    hits: Sequence[RecallHit], k: int, budget_tokens: int, counter: TokenCounter,
    render: Callable[[RecallHit], None] | None = None,
) -> tuple[list[RecallHit], list[RecallHit]]:
    """``(injected, idle)``: the best hits that fit ``k`` and the budget; those the budget left out.

    A hit that does not fit is skipped, not a stop: a shorter one further down may still fit.
    ``render`` fills a hit's text just before it is measured, so only what is considered is rendered.
    With a counter that bounds its count (an ``at_most`` method, ``E5TokenCounter.at_most``), a hit that fits by the
    bounds of everything taken so far is taken without tokenizing; the exact counts are taken only when
    the bounds do not settle it, so the choice is the one exact counting makes."""
    injected: list[RecallHit] = []
    idle: list[RecallHit] = []
    at_most = getattr(counter, "at_most", None)
    exact = False  # whether ``used`` is the exact count of what is taken, or a bound of it
    used = (at_most or counter.count)(HEADER) + 1
    for hit in hits:
        if len(injected) >= k:
            break
        if render is not None:
            render(hit)
        if at_most is not None and not exact:
            bound = at_most(hit.text) + 1  # the newline joining it
            if used + bound <= budget_tokens:
                injected.append(hit)
                used += bound
                continue
            exact = True
            used = counter.count(HEADER) + 1 + sum(counter.count(h.text) + 1 for h in injected)
        cost = counter.count(hit.text) + 1  # the newline joining it
        if used + cost > budget_tokens:
            idle.append(hit)
            continue
        injected.append(hit)
        used += cost
    return injected, idle
