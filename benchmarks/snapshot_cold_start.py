"""Cold start on a large namespace, two checkouts side by side: a new process imports the engine, opens
a data directory loaded by ``scale.py`` and answers its first recall (the hash embedder of
``scale.py``, so only the engine's cost is counted). The checkouts alternate, so both see the same
machine load; the summary is the median per checkout.

    .venv/bin/python benchmarks/snapshot_cold_start.py --data /tmp/coldstart-scale/n100000 \\
        --code /path/to/main --code . [--rounds 3]

``--data`` is a directory ``scale.py --sizes 100000 --workdir /tmp/coldstart-scale`` loaded (namespace
``user:bench``). Each checkout runs in a child started in that checkout, with only it on the import
path (``python -c`` would put the caller's working directory first, and so run the caller's code for
every checkout); the child reports where it imported the engine from, and a mismatch stops the run.
A checkout that keeps recall snapshots on disk (``recall/snapshot_file.py``) builds and saves on its
first run, so run one round more than you report, or look at the later rounds."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import resource, sys, time
t0 = time.perf_counter()
from hindsight_core.embeddings.hashed import HashedWordEmbedder
import hindsight_core
from hindsight_core import Hindsight
print("engine:", hindsight_core.__file__, file=sys.stderr)
t1 = time.perf_counter()
hs = Hindsight(sys.argv[2], embedder=HashedWordEmbedder())
t2 = time.perf_counter()
hs.recall("What did I say about migormidan and kalogor?", "user:bench", track=False)
t3 = time.perf_counter()
import psutil
rss = psutil.Process().memory_info().rss / 2**20
usage = resource.getrusage(resource.RUSAGE_SELF)
hs.close()
print(t1 - t0, t2 - t1, t3 - t2, rss, usage.ru_utime + usage.ru_stime)
"""

COLUMNS = ("process wall s", "imports s", "open s", "first recall s", "RSS MB", "process CPU s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True)
    parser.add_argument("--code", action="append", required=True, help="a checkout (repeat)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[list[float]]] = {code: [] for code in args.code}
    for _ in range(args.rounds):
        for code in args.code:
            tree = os.path.abspath(code)
            env = dict(os.environ, PYTHONPATH=tree)
            t = time.perf_counter()
            child = subprocess.run(
                [sys.executable, "-c", CHILD, tree, os.path.abspath(args.data)],
                env=env,
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            )
            imported = next(line for line in child.stderr.splitlines() if line.startswith("engine: "))[8:]
            if not os.path.abspath(imported).startswith(tree + os.sep):
                raise SystemExit(f"the child for {tree} imported the engine from {imported}")
            out = child.stdout.split()
            runs[code].append([time.perf_counter() - t, *(float(x) for x in out)])
            print(code, " ".join(f"{x:.2f}" for x in runs[code][-1]), file=sys.stderr, flush=True)
    print("| checkout | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for code, rows in runs.items():
        medians = [statistics.median(column) for column in zip(*rows, strict=True)]
        print(
            f"| {code} | "
            + " | ".join(f"{x:.2f}" if i < 4 else f"{x:.0f}" if i == 4 else f"{x:.2f}" for i, x in enumerate(medians))
            + " |"
        )


if __name__ == "__main__":
    main()
