"""One app process of the multi-process deployment test: records N events with ``source_id``s into its
namespace on the shared services (PostgreSQL, Chroma server, Redis), recalling every few writes, and
leaves consolidation to the workers. Prints one JSON line: acknowledged ids, errors raised to it, recalls.

Usage: python app_child.py PATH NAMESPACE N   (services from HINDSIGHT_DATABASE_URL / _CHROMA_URL / _REDIS_URL)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hindsight_core import Hindsight
from hindsight_core.config import HindsightConfig, RecallConfig

FACTS = [
    "I'm allergic to peanuts.", "I live in Lisbon.", "My name is Dana.", "I work as a nurse.",
    "I love jazz music.", "I hate cilantro.", "I'm vegetarian.", "I play the violin.", "I'm learning Korean.",
    "I have a dog named Rex.", "I prefer window seats.", "I love hiking in the mountains.",
]


def event(i: int) -> str:
    """Facts between notes; every text distinct so no two records are near-duplicates."""
    if i % 5 == 0:
        return FACTS[(i // 5) % len(FACTS)]
    return f"Note {i}: the parcel number {i * 7919 % 10007} waits at desk {i % 13}."


def main() -> None:
    path, namespace, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    acknowledged: list[str] = []
    errors: list[str] = []
    recalls = 0
    # recall reads the Chroma server even in these small namespaces (which would otherwise scan the
    # snapshot's vectors), so a server outage is met on the read path too
    config = HindsightConfig(recall=RecallConfig(exact_vector_max_memories=0))
    with Hindsight(path, background_consolidation=False, config=config) as hs:
        for i in range(n):
            try:
                acknowledged.append(hs.record(event(i), namespace, session_id=f"s{i // 50}",
                                              source_id=f"{namespace}#{i}").id)
                if i % 5 == 4:
                    hs.recall("What am I allergic to?", namespace)
                    recalls += 1
            except Exception as exc:  # counted and reported: the test requires none
                errors.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps({"acknowledged": acknowledged, "errors": errors, "recalls": recalls}), flush=True)


if __name__ == "__main__":
    main()
