"""When a memory will go cold and be archived if nothing recalls it again (``hindsight sweep --dry-run``).

The same rules as ``sweep``: an active memory goes cold once its activation is below
``cold_log_activation`` *and* it has been idle ``cold_idle_days``, unless it is pinned or a current
standing fact (``lifecycle/standing.py``); a ``state`` also goes cold when it expires; a
cold memory is archived once idle ``archive_after_days``. A recall reinforces the memory and moves both
dates, so these are the dates of the memory left alone. Pure arithmetic on the stored activation."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from hindsight_core.clock import from_ts
from hindsight_core.config import HindsightConfig
from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_core.types import Memory, Status

_DAY = 86_400.0


class Forecast(BaseModel):
    memory_id: str
    cold_at: datetime | None  #: ``None``: never (pinned, a current standing fact, or a layer that does not decay)
    archive_at: datetime | None


def cold_and_archive(
    memory: Memory, rate: float, cfg: LifecycleConfig, *, held: bool = False
) -> tuple[float | None, float | None]:
    """The timestamps a sweep would first cool and archive ``memory`` (``None``: never). ``held``: a
    current standing fact (``Inspection.held``), which the sweep does not let fade (a ``state`` of one
    still expires)."""
    ref = memory.activation.ref_time
    cold: float | None
    if memory.status == Status.COLD:
        cold = ref
    elif memory.status != Status.ACTIVE or memory.pinned:
        cold = None
    else:
        cold = None
        if rate > 0 and not held:  # a held standing fact does not fade; a state of one still expires
            faded = ref + max(0.0, (memory.activation.log_base - cfg.cold_log_activation) / rate)
            cold = max(faded, ref + cfg.cold_idle_days * _DAY)
        if memory.expires_at is not None:
            expires = memory.expires_at.timestamp()
            cold = expires if cold is None else min(cold, expires)
    if cold is None:
        return None, None
    return cold, max(cold, ref + cfg.archive_after_days * _DAY)


def forecast(memory: Memory, config: HindsightConfig, *, held: bool = False) -> Forecast:
    """The dates a sweep would first cool and archive ``memory`` (in the past when it is overdue);
    ``held`` as for :func:`cold_and_archive`."""
    cold, archive = cold_and_archive(memory, config.activation.rate(memory.layer), config.lifecycle, held=held)
    return Forecast(
        memory_id=memory.id,
        cold_at=None if cold is None else from_ts(cold),
        archive_at=None if archive is None else from_ts(archive),
    )
