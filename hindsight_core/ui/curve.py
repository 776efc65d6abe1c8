"""A memory's activation over time: the past rebuilt from the recall log, the future projected to the
day the sweep would make it cold and archive it.

The store keeps only the latest ``(log_base, ref_time)``: every reinforcement folds ``A(now) +
reinforce_weight * relevance`` into it. So the past is walked backwards from the stored state, undoing
one logged injection at a time; the present and the projection are exact, the past is as exact as the
recall log (reinforcement from elsewhere, such as ``feedback``, is not in it). ``ln A`` is linear in
time between reinforcements, so a segment's two ends describe it exactly."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from hindsight_core.clock import to_ts
from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_core.lifecycle.forecast import cold_and_archive
from hindsight_core.types import Memory, Status

DAY = 86_400.0
#: Floor for a rebuilt activation that the log says was smaller than one reinforcement (the stored
#: state also saw reinforcement the log does not hold): the curve stays drawable, in log space.
_MIN_ACTIVATION = 1e-6


@dataclass
class Reinforcement:
    at: float
    relevance: float
    before: float  # ln A just before
    after: float  # ln A just after


@dataclass
class ActivationCurve:
    """``ln A`` over time as straight segments ``(t0, lnA0, t1, lnA1)``, oldest first."""

    start: float
    now: float
    rate: float
    cold_log: float
    past: list[tuple[float, float, float, float]] = field(default_factory=list)
    #: From now on, undisturbed: what the sweep will see if nothing recalls the memory again.
    future: tuple[float, float, float, float] | None = None
    reinforcements: list[Reinforcement] = field(default_factory=list)
    now_log: float = 0.0
    #: When the sweep would make it cold (``None``: never, or it is not active).
    cold_at: float | None = None
    #: When the sweep would archive it (cold and idle past ``archive_after_days``).
    archive_at: float | None = None
    #: Why there is no projection, or what it rests on, in words.
    note: str = ""


def _log_at(log_base: float, ref: float, rate: float, t: float) -> float:
    return log_base - rate * (t - ref)


def activation_curve(
    memory: Memory, *, rate: float, now: float, lifecycle: LifecycleConfig, reinforce_weight: float,
    injections: Sequence[tuple[float, float]], held: bool = False,
) -> ActivationCurve:
    """``injections`` are ``(time, relevance)`` of logged recalls that injected the memory; ``held``: a
    current standing fact, which the sweep does not let fade (``Inspection.held``)."""
    act = memory.activation
    start = min(to_ts(memory.occurred_at), to_ts(memory.created_at), act.ref_time)
    curve = ActivationCurve(start=start, now=now, rate=rate, cold_log=lifecycle.cold_log_activation)
    # walk back from the stored state through the reinforcements it folded in
    applied = sorted((t, r) for t, r in injections if start <= t <= max(act.ref_time, start))
    log_base, ref = act.log_base, act.ref_time
    segment_end = now
    rebuilt: list[Reinforcement] = []
    segments: list[tuple[float, float, float, float]] = []
    for at, relevance in reversed(applied):
        after = _log_at(log_base, ref, rate, at)
        segments.append((at, after, segment_end, _log_at(log_base, ref, rate, segment_end)))
        before_value = math.exp(after) - reinforce_weight * relevance
        before = math.log(max(before_value, _MIN_ACTIVATION))
        rebuilt.append(Reinforcement(at=at, relevance=relevance, before=before, after=after))
        log_base, ref, segment_end = before, at, at
    first = (start, _log_at(log_base, ref, rate, start), segment_end, _log_at(log_base, ref, rate, segment_end))
    segments.append(first)
    curve.past = segments[::-1]
    curve.reinforcements = rebuilt[::-1]
    curve.now_log = act.log_at(now, rate)
    pinned = memory.pinned
    cold_at, archive_at = cold_and_archive(memory, rate, lifecycle, held=held)
    if memory.status == Status.ACTIVE and cold_at is not None and archive_at is not None:
        curve.cold_at = max(cold_at, now)
        curve.archive_at = max(archive_at, curve.cold_at)
        curve.note = "projected if nothing recalls it again; the sweep applies it on its next run after that"
    elif memory.status == Status.COLD and archive_at is not None:
        curve.archive_at = max(archive_at, now)
        curve.note = "cold: out of the indexes; archived by the first sweep after this date"
    elif pinned:
        curve.note = "pinned: never fades out"
    elif held and memory.status == Status.ACTIVE:
        curve.note = "a standing fact about the person: kept while current, until a later statement replaces it"
    elif rate <= 0:
        curve.note = "this layer does not decay"
    else:
        curve.note = f"{memory.status.value}: the sweep no longer considers it"
    horizon = max(now + 30 * DAY, (curve.archive_at or curve.cold_at or now) + 14 * DAY)
    horizon = min(horizon, now + 3 * 365 * DAY)
    curve.future = (now, curve.now_log, horizon, act.log_at(horizon, rate))
    return curve
