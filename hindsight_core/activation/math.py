"""The activation model in one place: decay rate, a new memory's starting activation, decay,
reinforcement, scaling, and the index key (docs/architecture.md, "Activation").

``A(t) = A_ref · exp(-λ (t - t_ref))`` is kept in log space (``log_base = ln A_ref``), so a memory idle
for years never underflows. ``ln A(t) = ln A_ref + λ t_ref - λ t``: the last term is the same for every
memory of a layer at a given ``t``, so sorting by ``key = ln A_ref + λ (t_ref - epoch)`` equals sorting
by ``A(now)`` at every ``now``, and keys change only when a memory is touched.

Plain floats and :class:`~hindsight_core.types.Activation` only (no numpy): the configuration imports
this module, and ``import hindsight_core`` stays light. The relational store keeps one SQL form of
:func:`faded` (sweep's candidate query); the two must say the same thing."""

from __future__ import annotations

import math

from hindsight_core.types import Activation

_DAY = 86_400.0
#: Key times are measured from this epoch (2020-01-01 UTC) to keep ``λ·t`` small and precise.
KEY_EPOCH = 1_577_836_800.0
#: Importance is 1..5; 3 is neutral (starts at ``initial_log``).
NEUTRAL_IMPORTANCE = 3


def decay_rate(half_life_days: float | None) -> float:
    """λ per second for a half-life in days; 0 (no decay) for ``None`` or 0."""
    return 0.0 if not half_life_days else math.log(2) / (half_life_days * _DAY)


def initial(importance: int, ref_time: float, *, initial_log: float, importance_weight: float) -> Activation:
    """A fresh memory: ``ln A_ref = initial_log + importance_weight · (importance - 3)`` at ``ref_time``
    (when it happened, so imported history starts as old as it is)."""
    return Activation(
        log_base=initial_log + importance_weight * (importance - NEUTRAL_IMPORTANCE), ref_time=ref_time
    )


def log_at(activation: Activation, rate: float, now: float) -> float:
    """``ln A(now)``."""
    return activation.log_base - rate * (now - activation.ref_time)


def faded(activation: Activation, rate: float, now: float, threshold: float) -> bool:
    """Whether ``ln A(now)`` fell below ``threshold`` (sweep's "faded" test)."""
    return log_at(activation, rate, now) < threshold


#: The smallest activation a negative reinforcement leaves (``ln`` of it is about -690).
_FLOOR = 1e-300


def reinforced(activation: Activation, rate: float, now: float, weight: float) -> Activation:
    """``A_ref <- A(now) + weight``, ``t_ref <- now``: a touch adds to what is left, in linear space
    (a merged duplicate adds ``reinforce_weight``, an injection ``reinforce_weight · relevance``). A
    negative ``weight`` (a recall whose best score was negative) takes away, down to a floor."""
    current = log_at(activation, rate, now)
    if weight > 0:
        return Activation(log_base=_logaddexp(current, math.log(weight)), ref_time=now)
    if weight == 0:
        return Activation(log_base=current, ref_time=now)
    return Activation(log_base=math.log(max(math.exp(current) + weight, _FLOOR)), ref_time=now)


def scaled(activation: Activation, factor: float) -> Activation:
    """``A(t) × factor`` at every ``t``: in log space a shift of ``log_base`` (idle time unchanged)."""
    return Activation(log_base=activation.log_base + math.log(factor), ref_time=activation.ref_time)


def lowered(activation: Activation, rate: float, now: float, ceiling: float) -> Activation:
    """``ln A(now)`` brought down to at most ``ceiling`` by a shift of ``log_base`` (``demote``): the idle
    time is kept, so the sweep's clock runs on from the last real use, and an activation already lower
    stays as it is."""
    excess = log_at(activation, rate, now) - ceiling
    if excess <= 0:
        return activation
    return Activation(log_base=activation.log_base - excess, ref_time=activation.ref_time)


def index_key(activation: Activation, rate: float) -> float:
    """The activation index's sort key (see the module docstring)."""
    return activation.log_base + rate * (activation.ref_time - KEY_EPOCH)


def log_from_key(key: float, rate: float, now: float) -> float:
    """``ln A(now)`` back from an index key."""
    return key - rate * (now - KEY_EPOCH)


def _logaddexp(a: float, b: float) -> float:
    """``ln(e^a + e^b)`` without overflow (numpy's formula, without importing numpy)."""
    if a == b:
        return a + math.log(2)
    high, low = (a, b) if a > b else (b, a)
    return high + math.log1p(math.exp(low - high))
