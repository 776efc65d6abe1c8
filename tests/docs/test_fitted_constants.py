"""The recall constants chosen on benchmark data are marked as such, so a tuning step (and a reader of
docs/configuration.md) knows which defaults are a fit to someone else's data."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_core.config import ActivationConfig, LifecycleConfig, RecallConfig, WriteConfig, fitted_constants

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"

#: Adding a fitted knob without marking it, or unmarking one, changes this set on purpose only.
FITTED = {
    "channel_weights", "context_weight", "context_same_speaker_weight",
    "floor_coverage_weight", "floor_anchor_base",
    "floor_cross_lingual_offset", "floor_history_relief",
    "collapse_duplicate_z",
}


def test_the_fitted_recall_constants_are_the_marked_ones_each_with_its_data() -> None:
    marked = fitted_constants(RecallConfig)
    assert set(marked) == FITTED
    assert all(on.strip() for on in marked.values())


@pytest.mark.parametrize("section", [ActivationConfig, WriteConfig, LifecycleConfig])
def test_no_other_section_claims_a_fitted_constant(section: type) -> None:
    assert fitted_constants(section) == {}


def test_the_configuration_reference_shows_each_fitted_constant_as_fitted() -> None:
    rows = {line.split("`")[1]: line for line in DOC.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `recall.")}
    for name, on in fitted_constants(RecallConfig).items():
        assert f"*Fitted on {on}.*" in rows[f"recall.{name}"], name
    assert "Fitted on" not in rows["recall.default_k"]
