"""Child process for the consolidation-lease tests: opens the engine on a shared data directory and
consolidates one namespace with a slow extractor (so another process, or a SIGKILL, can land mid-job).

The embedded Chroma is single-process, so the child keeps vectors in a process-local index (below);
everything consolidation coordinates through — memories, jobs, leases, the activation index — is the
shared SQLite file. Prints ``batch`` when a batch starts and the report as JSON at the end.

Usage: python consolidate_child.py DATA_DIR NAMESPACE GO_FILE DELAY_S LEASE_S"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.lifecycle.config import LifecycleConfig
from hindsight_core.lifecycle.rules import RuleExtractor
from hindsight_core.lifecycle.schema import ExtractionContext, ExtractionResult
from hindsight_core.types import Memory
from hindsight_core.vectors.base import VectorHit


class LocalVectors:
    """A process-local ``VectorIndex`` (brute-force cosine)."""

    def __init__(self) -> None:
        #: (namespace, layer) -> memory id -> (vector, kind)
        self._rows: dict[tuple[str, str], dict[str, tuple[np.ndarray, str]]] = {}

    def upsert(self, namespace: str, layer: str, ids: Sequence[str], vectors: np.ndarray,
               kinds: Sequence[str]) -> None:
        rows = self._rows.setdefault((namespace, layer), {})
        for mid, vector, kind in zip(ids, vectors, kinds, strict=True):
            rows[mid] = (np.asarray(vector, dtype=np.float32), kind)

    def delete(self, namespace: str, layer: str, ids: Sequence[str]) -> None:
        for mid in ids:
            self._rows.get((namespace, layer), {}).pop(mid, None)

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        for layer in layers:
            self._rows.pop((namespace, layer), None)

    def query(self, namespace: str, layer: str, vector: np.ndarray, n: int, *,
              kinds: Sequence[str] | None = None) -> list[VectorHit]:
        hits = [VectorHit(mid, float(np.dot(v, vector) / (np.linalg.norm(v) * np.linalg.norm(vector) or 1.0)))
                for mid, (v, kind) in self._rows.get((namespace, layer), {}).items()
                if kinds is None or kind in kinds]
        return sorted(hits, key=lambda h: -h.similarity)[:n]

    def count(self, namespace: str, layer: str) -> int:
        return len(self._rows.get((namespace, layer), {}))

    def ids(self, namespace: str, layer: str) -> set[str]:
        return set(self._rows.get((namespace, layer), {}))

    def close(self) -> None:
        self._rows.clear()


class SlowRules:
    """The rule extractor, batch by batch (as an LLM extractor runs), taking ``delay`` per batch."""

    name = "slow-rules"
    uses_llm = True

    def __init__(self, delay: float) -> None:
        self._rules = RuleExtractor()
        self._delay = delay

    def extract(self, episodes: Sequence[Memory], context: ExtractionContext) -> ExtractionResult:
        print("batch", flush=True)
        time.sleep(self._delay)
        return self._rules.extract(episodes, context)


def main() -> None:
    data, namespace, go, delay, lease = sys.argv[1], sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]), float(
        sys.argv[5])
    config = HindsightConfig(lifecycle=LifecycleConfig(batch_episodes=3, consolidation_lease_s=lease))
    with Hindsight(data, vector_index=LocalVectors(), extractor=SlowRules(delay), config=config,
                   background_consolidation=False) as hs:
        print("ready", flush=True)
        while not go.exists():
            time.sleep(0.01)
        report = hs.consolidate(namespace)
        print(report.model_dump_json(exclude={"created_ids", "superseded_ids"}), flush=True)


if __name__ == "__main__":
    main()
