"""Deployment figures: record+recall throughput with 1, 2, 4, 8 app processes on the PostgreSQL
deployment (PostgreSQL + a Chroma server started here + Redis), against the embedded default in one
process as the reference; recall p50/p95 on each backend at a given size. One run, ratios side by side.

    .venv/bin/python benchmarks/deployment.py --n 200 --procs 1,2,4,8 --size 10000 \\
        [--database-url postgresql://postgres@127.0.0.1:5432/test] [--redis redis://127.0.0.1:6379/14] [--write]

Each app process records ``--n`` events (a recall after every 5th) into its own namespace; throughput is
operations (records + recalls) per second of wall time across all processes. A fresh PostgreSQL schema
is created and dropped; the Chroma server runs from a temporary directory on a free port.

``--embedder hash`` swaps the real model for the deterministic hash embedder of ``benchmarks/scale.py``
(microseconds per text) in every process, so the figures measure the engine and its services rather
than CPU-bound model inference; the default is the engine's own embedder."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

CHILD = r"""
import json, os, sys, time
from hindsight_core import Hindsight
path, ns, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, os.environ["HINDSIGHT_BENCH_DIR"])
from deployment import make_embedder
with Hindsight(path, background_consolidation=False, embedder=make_embedder()) as hs:
    sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.readline()
    t = time.perf_counter(); ops = 0
    for i in range(n):
        hs.record(f"Note {i}: parcel {i * 7919 % 10007} waits at desk {i % 13}; I like green tea.", ns,
                  session_id="s", source_id=f"{ns}#{i}")
        ops += 1
        if i % 5 == 4:
            hs.recall("Which parcel waits at desk 3?", ns); ops += 1
    print(json.dumps({"ops": ops, "seconds": time.perf_counter() - t}))
"""


def make_embedder() -> object | None:
    """The embedder ``--embedder`` names (passed to child processes in the environment); None: the
    engine's default model."""
    if os.environ.get("HINDSIGHT_BENCH_EMBEDDER", "default") != "hash":
        return None
    from hindsight_core.embeddings.hashed import HashedWordEmbedder

    return HashedWordEmbedder()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(**services: str) -> dict[str, str]:
    return {**os.environ, "ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "PYTHONPATH": str(ROOT), "HINDSIGHT_BENCH_DIR": str(Path(__file__).resolve().parent), **services}


def start_chroma(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    chroma = Path(sys.executable).with_name("chroma")
    proc = subprocess.Popen([str(chroma), "run", "--path", str(directory), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("chroma run did not answer")


def throughput(procs: int, n: int, workdir: Path, env: dict[str, str]) -> float:
    """ops/s across ``procs`` app processes started together (each waits for a go line)."""
    run = uuid.uuid4().hex[:6]
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(workdir / f"{run}-{i}"), f"bench:{run}:{i}", str(n)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
                for i in range(procs)]
    for c in children:
        assert c.stdout is not None and c.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    for c in children:
        assert c.stdin is not None
        c.stdin.write("go\n")
        c.stdin.flush()
    results = [json.loads(c.communicate()[0].strip().splitlines()[-1]) for c in children]
    wall = time.perf_counter() - started
    return sum(r["ops"] for r in results) / wall


def recall_latency(size: int, workdir: Path, **services: str | None) -> tuple[float, float]:
    """p50/p95 ms of recall in one namespace of ``size`` memories (bulk-imported first)."""
    from hindsight_core import Hindsight

    with Hindsight(workdir / uuid.uuid4().hex[:6], background_consolidation=False, embedder=make_embedder(),  # type: ignore[arg-type]
                   **services) as hs:
        ns = f"latency:{uuid.uuid4().hex[:6]}"
        hs.record_many([{"content": f"Memory {i}: item {i * 31 % 997} is stored on shelf {i % 17}.",
                         "source_id": f"{i}"} for i in range(size)], ns)
        queries = [f"Where is item {q * 31 % 997} stored?" for q in range(40)]
        hs.recall(queries[0], ns)  # warm
        times = []
        for q in queries:
            t = time.perf_counter()
            hs.recall(q, ns)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100, help="records per app process")
    parser.add_argument("--procs", default="1,2,4,8", help="app process counts")
    parser.add_argument("--size", type=int, default=1000, help="memories for the recall latency figure")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--embedder", choices=["default", "hash"], default="default",
                        help="hash: the deterministic fast embedder (measures the engine, not the model)")
    parser.add_argument("--write", action="store_true", help="write the table to docs/benchmark-log.md")
    args = parser.parse_args()
    os.environ["HINDSIGHT_BENCH_EMBEDDER"] = args.embedder  # this process and, through _env, the children
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(args.database_url, autocommit=True)
    admin.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in args.database_url else "?"
    pg = f"{args.database_url}{sep}options=-csearch_path%3D{schema}"
    workdir = Path(tempfile.mkdtemp(prefix="hindsight-deploy-bench-"))
    chroma, chroma_url = start_chroma(workdir / "chroma-server")
    rows: list[tuple[str, str]] = []
    try:
        embedded = throughput(1, args.n, workdir, _env())
        rows.append(("embedded (SQLite + Chroma in the directory), 1 process", f"{embedded:.1f} ops/s (1.00x)"))
        deployment = _env(HINDSIGHT_DATABASE_URL=pg, HINDSIGHT_CHROMA_URL=chroma_url, HINDSIGHT_REDIS_URL=args.redis)
        from hindsight_core import Hindsight

        Hindsight(workdir / "init", database_url=pg, chroma_url=chroma_url, redis_url=args.redis,  # the schema
                  embedder=make_embedder()).close()  # type: ignore[arg-type]
        for procs in [int(p) for p in args.procs.split(",")]:
            ops = throughput(procs, args.n, workdir, deployment)
            rows.append((f"PostgreSQL + Chroma server + Redis, {procs} app processes",
                         f"{ops:.1f} ops/s ({ops / embedded:.2f}x)"))
        for label, services in (("embedded", {}),
                                ("PostgreSQL + Chroma server + Redis",
                                 {"database_url": pg, "chroma_url": chroma_url, "redis_url": args.redis})):
            p50, p95 = recall_latency(args.size, workdir, **services)
            rows.append((f"recall at {args.size} memories, {label}", f"p50 {p50:.0f} ms, p95 {p95:.0f} ms"))
    finally:
        chroma.kill()
        chroma.wait()
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()
        shutil.rmtree(workdir, ignore_errors=True)
    command = (f"benchmarks/deployment.py --n {args.n} --procs {args.procs} --size {args.size} "
               f"--embedder {args.embedder}")
    load = os.getloadavg()[0]
    table = "| configuration | result |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
    print(f"{command}\n\n{table}")
    if args.write:
        from _report import write_section

        write_section("deployment", "## Deployment: app processes on PostgreSQL + Chroma server + Redis (issue 13)\n\n"
                      f"`{command}` (one run, {os.cpu_count()} cores shared with other jobs, "
                      f"load average {load:.1f} at the end)\n\n{table}\n")


if __name__ == "__main__":
    main()
