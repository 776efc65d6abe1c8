"""The activation curve against the engine itself: the rebuilt past matches the activation the memory
really had before each recall, and the projected dates are the days the real sweep acts on it."""

from __future__ import annotations

import math
from pathlib import Path

from hindsight_core import Hindsight
from hindsight_core.clock import to_ts
from hindsight_core.types import Memory, Status
from hindsight_core.ui.curve import DAY, activation_curve
from hindsight_core.ui.svg import activation_svg

from .conftest import Clock

NS = "user:curve"


def _curve(hs: Hindsight, memory: Memory):  # type: ignore[no-untyped-def]
    cfg = hs.config
    return activation_curve(
        memory, rate=cfg.activation.rate(memory.layer), now=to_ts(hs.now()), lifecycle=cfg.lifecycle,
        reinforce_weight=cfg.activation.reinforce_weight, injections=hs.store.injections(NS, memory.id),
        held=memory.id in hs.inspection.held([memory]),
    )


def test_rebuilt_past_matches_the_engine_and_the_sweep_keeps_the_projected_dates(
    tmp_path: Path, embedder: object
) -> None:
    clock = Clock()
    with Hindsight(tmp_path / "data", clock=clock, embedder=embedder) as hs:  # type: ignore[arg-type]
        # an event, not a standing fact about the person: it fades (a standing fact is held, below)
        evening = hs.record("We watched the Eurovision final at Ana's flat last night.", NS, session_id="s1")
        hs.record("Can you suggest a good book about gardening?", NS, session_id="s1")
        rate = hs.config.activation.rate(evening.layer)
        measured: list[float] = []
        for days in (2, 6, 3):
            clock.advance(days=days)
            current = hs.get(evening.id)
            assert current is not None
            measured.append(current.activation.log_at(to_ts(clock()), rate))
            result = hs.recall("Where did we watch the Eurovision final?", NS, session_id="s1")
            assert evening.id in [m.id for m in result.memories]
            hs.flush_recall_log()
        clock.advance(days=1)
        memory = hs.get(evening.id)
        assert memory is not None
        curve = _curve(hs, memory)
        assert [r.before for r in curve.reinforcements] == _approx(measured)
        assert all(r.after > r.before for r in curve.reinforcements)
        # the first segment starts from what record() gave it; the curve is continuous between recalls
        assert math.isclose(curve.past[0][1], evening.activation.log_base, abs_tol=1e-3)
        for (_, _, t1, v1), r in zip(curve.past, curve.reinforcements, strict=False):
            assert t1 == r.at and math.isclose(v1, r.before, abs_tol=1e-9)
        assert math.isclose(curve.now_log, memory.activation.log_at(to_ts(clock()), rate))
        svg = activation_svg(curve)
        assert svg.count('class="recall"') == 3 and 'class="cold-threshold"' in svg
        # the sweep makes it cold on the projected day, not before, and archives it on the other one
        assert curve.cold_at is not None and curve.archive_at is not None
        assert curve.archive_at > curve.cold_at > to_ts(clock())
        clock.set_ts(curve.cold_at - 0.5 * DAY)
        hs.sweep()
        assert hs.get(evening.id).status == Status.ACTIVE  # type: ignore[union-attr]
        clock.set_ts(curve.cold_at + 60)
        hs.sweep()
        cold = hs.get(evening.id)
        assert cold is not None and cold.status == Status.COLD
        assert math.isclose(_curve(hs, cold).archive_at or 0.0, curve.archive_at)
        clock.set_ts(curve.archive_at - 0.5 * DAY)
        hs.sweep()
        assert hs.get(evening.id) is not None
        clock.set_ts(curve.archive_at + 60)
        assert evening.id in hs.sweep().archived_ids


def test_a_standing_fact_is_shown_as_kept_and_the_sweep_keeps_it(tmp_path: Path, embedder: object) -> None:
    clock = Clock()
    with Hindsight(tmp_path / "data", clock=clock, embedder=embedder) as hs:  # type: ignore[arg-type]
        allergy = hs.record("I'm allergic to peanuts, so no satay for me.", NS, session_id="s1")
        clock.advance(days=400)
        memory = hs.get(allergy.id)
        assert memory is not None
        curve = _curve(hs, memory)
        assert curve.cold_at is None and curve.archive_at is None and "standing fact" in curve.note
        hs.sweep()
        assert hs.get(allergy.id).status == Status.ACTIVE  # type: ignore[union-attr]


def _approx(values: list[float]) -> list[object]:
    import pytest

    # the recall log keeps scores to 4 decimals: relevance, and so the rebuilt value, is that close
    return [pytest.approx(v, abs=1e-3) for v in values]
