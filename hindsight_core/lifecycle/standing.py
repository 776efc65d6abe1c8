"""What the sweep holds: pinned memories, and what is current about the person.

Decay is right for what was talked about and wrong for what a person *is*: an allergy, a health
condition, a family member, a diet, said once and asked about months later with nothing in between
recalling it. Left to decay, "I'm allergic to aspirin" went cold after a month and was archived after
three, and "what can I take for a headache?" got nothing. So the sweep never makes cold, while it is
current (active):

- a standing fact: the same learned sentence kind that offers a memory to a request
  (``recall/profile.py``), a person's own statement of a lasting state, condition, habit or preference,
  or a fact distilled from one; read from the memory's stored vector, so no model call (a memory
  without a vector for the engine's embedder is not held);
- a distilled fact with a slot (home, job, allergy, budget): the current value of something about the
  person until a later value of the same slot supersedes it.

A later change supersedes either as any value (then it fades), a ``state`` past its time to live still
expires, and a held memory still decays in ranking, so one never asked about does not crowd out what
is. ``pin`` is the explicit form of the same hold, for what neither rule sees; ``demote`` (forgetting on
request) is the explicit release: a demoted memory is not held unless pinned."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hindsight_core.recall import sentence_kinds
from hindsight_core.recall.profile import is_standing
from hindsight_core.store import demotions
from hindsight_core.types import Layer, Memory, Status

if TYPE_CHECKING:
    from hindsight_core.context import EngineContext


def held(ctx: EngineContext, memories: Sequence[Memory]) -> set[str]:
    """Ids of ``memories`` the sweep does not make cold: pinned ones, and active standing facts and
    distilled facts with a slot that were not demoted (forgetting on request lets a memory fade, whatever
    its kind: ``Hindsight.demote``)."""
    demoted = demotions.demoted_among(ctx.store, [m.id for m in memories if not m.pinned])
    current = [m for m in memories if m.status == Status.ACTIVE and m.id not in demoted]
    out = {m.id for m in memories if m.pinned} | {m.id for m in current if _holds_a_value(m)}
    rest = [m for m in current if m.id not in out]
    if not rest:
        return out
    vectors = ctx.store.get_embeddings(ctx.embedder.name, [m.id for m in rest])
    with_vector = [m for m in rest if m.id in vectors]
    if not with_vector:
        return out
    kinds = sentence_kinds.for_embedder(ctx.embedder)
    scores = kinds.standing(np.stack([vectors[m.id] for m in with_vector]))
    return out | {m.id for m, score in zip(with_vector, scores, strict=True)
                  if is_standing(m, float(score), kinds.standing_margin)}


def _holds_a_value(memory: Memory) -> bool:
    """A distilled fact with a slot (home, job, allergy, budget: ``lifecycle/rules.py``, or an LLM
    extractor's ``slot``) is the current value of something about the person until a later value of the
    same slot supersedes it."""
    return memory.layer == Layer.SEMANTIC and bool(memory.metadata.get("slot"))
