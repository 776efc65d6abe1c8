"""Deterministic tune / held-out split of a development set, and paired comparison of two runs.

Choices (fusion rule, floor operating point) are made on the tune part and reported on both: a part
is chosen by a hash of a stable id (a LoCoMo conversation's ``sample_id``, a LongMemEval
``question_id``), so the split never depends on file order, and a new item lands in a fixed part."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence


def part_of(item_id: str) -> str:
    """``"tune"`` or ``"held"``: half of the ids each, by the first byte of their SHA-1."""
    return "tune" if hashlib.sha1(f"hindsight:{item_id}".encode()).digest()[0] % 2 == 0 else "held"


def paired(before: Sequence[float], after: Sequence[float], *, rounds: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Paired comparison of per-question scores: mean difference, sign test counts and a paired
    bootstrap 95 % interval of the mean difference. A change counts when the interval excludes 0."""
    if len(before) != len(after):
        raise ValueError("paired comparison needs the same questions in both runs")
    diffs = [a - b for a, b in zip(before, after, strict=True)]
    n = len(diffs)
    if n == 0:
        return {"n": 0, "mean_diff": 0.0, "better": 0, "worse": 0, "ci_low": 0.0, "ci_high": 0.0}
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return {
        "n": n,
        "mean_diff": round(sum(diffs) / n, 4),
        "better": sum(d > 0 for d in diffs),
        "worse": sum(d < 0 for d in diffs),
        "ci_low": round(means[int(0.025 * rounds)], 4),
        "ci_high": round(means[int(0.975 * rounds) - 1], 4),
    }
