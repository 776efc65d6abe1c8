"""The engine's fixed cost per recall and per chat turn on a small namespace, two code trees side by side.

Each tree gets a worker process with the same data (``scale.py``'s hash embedder and synthetic
conversations, so only the engine's own cost is counted) and the floor (one unfiltered Chroma query on
the same vectors). The driver sends the same calls to both workers in alternation, so both see the same
machine load; each call reports its wall time and its process CPU time (all threads: on a loaded machine
the CPU time is the steadier figure). ``--profile`` prints instead, for the tree on ``PYTHONPATH``, where
a recall's (or a chat turn's) time goes per stage (cProfile on the calling thread's CPU clock, the
pipeline's worker threads, if any, run in the caller so that their stages are seen).

    .venv/bin/python benchmarks/recall_overhead.py --trees /path/to/before /path/to/after --size 1000
    PYTHONPATH=. .venv/bin/python benchmarks/recall_overhead.py --profile --size 100 --op recall
    .venv/bin/python benchmarks/recall_overhead.py --trees A B --size 100000 --workdir DIR  # scale.py's load
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
OPS = ("recall", "floor", "turn", "written")

#: (label, where the function is defined, its name): the stages of a recall and of a write.
STAGES = [
    ("recall", "recall/api.py", "recall"),
    ("  snapshot (change-log seek)", "recall/pipeline.py", "corpus"),
    ("  analyse the query", "recall/analysis.py", "analyze"),
    ("  embed the query", "scale.py", "embed_query"),
    ("  keyword matches", "recall/keyword.py", "sparse"),
    ("  activation channel", "recall/pipeline.py", "_activation_channel"),
    ("  vector channel (Chroma query)", "recall/pipeline.py", "_vector_channel"),
    ("  fusion (zsum)", "recall/fusion.py", "zsum"),
    ("  fresh rows (get_many_in)", "store/sql.py", "get_many_in"),
    ("  final scores and reasons", "recall/pipeline.py", "_final_scores"),
    ("  collapse", "recall/pipeline.py", "_collapse"),
    ("  pack and render", "recall/budget.py", "pack"),
    ("  token counts", "recall/pipeline.py", "count"),
    ("  log and reinforce", "recall/pipeline.py", "_record"),
    ("  waiting on worker threads", "_base.py", "result"),
    ("record", "engine.py", "record"),
    ("  outbox apply", "write/outbox.py", "apply"),
    ("  Chroma upsert", "vectors/chroma.py", "upsert"),
    ("  embedding cache", "write/outbox.py", "vectors_for"),
    ("  activation upsert", "write/outbox.py", "_sync_activation"),
    ("  outbox settle", "store/sql.py", "settle"),
    ("SQLite execute (commits included)", "~", "<method 'execute' of 'sqlite3.Connection' objects>"),
]


class _InCaller:
    """An executor that runs what it is given at once, in the caller's thread (for ``--profile``)."""

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True) -> None:
        pass


class Workload:
    """A namespace of ``size`` memories, its floor collection, and the calls the driver times. With
    ``workdir`` (a ``scale.py --workdir`` holding that size), the worker recalls on its own copy of the
    loaded namespace (a 100k load is minutes, a copy seconds) and the floor is the namespace's own Chroma
    collection, as ``scale.py --floor-from-engine`` measures it."""

    def __init__(self, size: int, workdir: Path | None = None) -> None:
        sys.path.insert(0, str(Path.cwd() / "benchmarks"))
        import chromadb
        from chromadb.config import Settings
        from scale import Conversations, load, settle

        from hindsight_core import Hindsight
        from hindsight_core.embeddings.hashed import HashedWordEmbedder

        self.root = root = Path(tempfile.mkdtemp(prefix="recall-overhead-"))
        embedder, conv = HashedWordEmbedder(), Conversations(seed=size)
        self.ns = "user:bench"
        if workdir is not None:
            shutil.copytree(workdir / f"n{size}", root / "data")
            self.hs = Hindsight(root / "data", embedder=embedder)
            conv.events(min(size, 1000), prefix="probe")  # the draws scale.py made before its queries
            for done in range(0, size, 2000):
                conv.events(min(2000, size - done), offset=done)
        else:
            self.hs = Hindsight(root / "data", embedder=embedder)
            load(self.hs, conv, self.ns, size)
        self.queries = [conv.query() for _ in range(100)]
        self.chat = conv.events(4000, offset=size, prefix="chat")
        self.position = 0
        self.vectors = [embedder.embed_query(q) for q in self.queries]
        if workdir is not None:
            self.hs.recall(self.queries[0], self.ns, track=False)
            settle(self.hs)
            # the engine's own collection through the engine's client (one client per directory in a
            # process, as Chroma asks), queried as the engine queries it
            found: list[Any] = []
            self.hs._recall._pipeline().vectors._on(  # type: ignore[attr-defined]
                self.ns, "episodic", False, lambda collection, where: found.append((collection, where)))
            assert found and found[0][1] is None, "the namespace has no collection of its own"
            self.floor = found[0][0]
        else:
            con = sqlite3.connect(root / "data" / "hindsight.sqlite3")
            rows = con.execute(
                "SELECT m.id, e.vector FROM memories m JOIN embeddings e ON e.memory_id = m.id WHERE m.namespace = ?",
                (self.ns,),
            ).fetchall()
            con.close()
            client = chromadb.PersistentClient(path=str(root / "floor"), settings=Settings(anonymized_telemetry=False))
            self.floor = client.create_collection("floor", embedding_function=None, metadata={"hnsw:space": "cosine"})
            self.floor.add(ids=[r[0] for r in rows],
                           embeddings=np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows]))
        for i in range(5):  # what is lazy is built, the token counter loaded
            self.turn(i)
            self.recall(i)

    def close(self) -> None:
        """Close the engine and remove the data (a copy of a 100k namespace is 650 MB)."""
        self.hs.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def recall(self, i: int) -> None:
        self.hs.recall(self.queries[i % len(self.queries)], self.ns, track=False)

    def floor_query(self, i: int) -> None:
        self.floor.query(query_embeddings=[self.vectors[i % len(self.vectors)]], n_results=40, include=["distances"])

    def turn(self, i: int) -> None:
        """Record the user's turn, recall on it, record the reply."""
        user, reply = self.chat[self.position], self.chat[self.position + 1]
        self.position += 2
        self.hs.record(str(user["content"]), self.ns, session_id="chat", role="user")
        self.hs.recall(str(user["content"]), self.ns, session_id="chat")
        self.hs.record(str(reply["content"]), self.ns, session_id="chat", role="assistant")

    def after_write(self, i: int) -> tuple[float, float]:
        """Record a turn (not timed), then recall: the recall's own wall and CPU time, which includes
        extending the namespace's snapshot by the write."""
        turn = self.chat[self.position]
        self.position += 1
        self.hs.record(str(turn["content"]), self.ns, session_id="chat", role=str(turn.get("role", "user")))
        cpu, wall = time.process_time(), time.perf_counter()
        self.recall(i)
        return time.perf_counter() - wall, time.process_time() - cpu

    def call(self, op: str) -> Callable[[int], object]:
        return {"recall": self.recall, "floor": self.floor_query, "turn": self.turn, "written": self.after_write}[op]


def serve(size: int, workdir: Path | None) -> None:
    """Worker: build the workload, then time each ``op i`` line read from stdin."""
    work = Workload(size, workdir)
    print("ready", flush=True)
    for line in sys.stdin:
        op, i = line.split()
        cpu, wall = time.process_time(), time.perf_counter()
        own = work.call(op)(int(i))
        elapsed = (time.perf_counter() - wall, time.process_time() - cpu)
        print(*(own if isinstance(own, tuple) else elapsed), flush=True)
    work.close()


def side_by_side(trees: list[str], size: int, n: int, workdir: Path | None) -> None:
    reuse = ["--workdir", str(workdir)] if workdir is not None else []
    workers = {
        tree: subprocess.Popen([sys.executable, __file__, "--serve", str(size), *reuse], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, cwd=tree, env=dict(os.environ, PYTHONPATH=tree))
        for tree in trees
    }
    for worker in workers.values():
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    wall: dict[tuple[str, str], list[float]] = {(t, op): [] for t in trees for op in OPS}
    cpu: dict[tuple[str, str], list[float]] = {(t, op): [] for t in trees for op in OPS}
    for op, count in (("recall", n), ("floor", n), ("turn", max(20, n // 5)), ("written", max(20, n // 5))):
        for i in range(count):
            for tree in trees if i % 2 == 0 else trees[::-1]:  # alternate who goes first
                worker = workers[tree]
                assert worker.stdin is not None and worker.stdout is not None
                worker.stdin.write(f"{op} {i}\n")
                worker.stdin.flush()
                w, c = worker.stdout.readline().split()
                wall[(tree, op)].append(float(w))
                cpu[(tree, op)].append(float(c))
    for worker in workers.values():
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    print(f"{size:,} memories; p50 ms, calls alternating between the trees ({n} recalls and floor queries, "
          f"{max(20, n // 5)} chat turns and recalls right after a write)\n")
    print("| tree | recall wall | floor wall | recall / floor | chat turn wall | after a write wall | after a write"
          " / cached | recall CPU | floor CPU | recall / floor (CPU) | chat turn CPU | after a write CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for tree in trees:
        r, f, t, a = (float(np.median(wall[(tree, op)])) * 1000 for op in OPS)
        rc, fc, tc, ac = (float(np.median(cpu[(tree, op)])) * 1000 for op in OPS)
        print(f"| `{tree}` | {r:.2f} | {f:.2f} | {r / f:.1f}x | {t:.1f} | {a:.2f} | {a / r:.2f}x | {rc:.2f} | {fc:.2f}"
              f" | {rc / fc:.1f}x | {tc:.1f} | {ac:.2f} |")


def profile(size: int, op: str, n: int, workdir: Path | None) -> None:
    work = Workload(size, workdir)
    pipeline = work.hs._recall._pipeline()
    pipeline._pool = _InCaller()  # type: ignore[assignment]
    call = work.call(op)
    profiler = cProfile.Profile(time.thread_time)
    profiler.enable()
    for i in range(n):
        call(i)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    print(f"{size:,} memories, per {op} (ms of the calling thread's CPU time, cProfile included, / {n}):\n")
    print("| stage | ms | calls |")
    print("|---|---|---|")
    for label, where, name in STAGES:
        total, calls = 0.0, 0
        for (filename, _, function), (_, ncalls, _, cumulative, _) in stats.items():
            if function == name and where in filename:
                total += cumulative
                calls += ncalls
        if calls:
            print(f"| {label} | {total / n * 1000:.3f} | {calls / n:.1f} |")
    work.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", nargs="+", default=["."], help="code trees to compare (each on PYTHONPATH)")
    parser.add_argument("--size", type=int, default=1000, help="memories in the namespace")
    parser.add_argument("--n", type=int, default=300, help="recalls (and floor queries) per tree")
    parser.add_argument("--profile", action="store_true", help="per-stage profile of the tree on PYTHONPATH")
    parser.add_argument("--op", choices=["recall", "turn"], default="recall", help="what --profile profiles")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="a scale.py --workdir holding --size loaded: each worker recalls on a copy of it")
    parser.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    workdir = args.workdir.resolve() if args.workdir is not None else None
    if args.serve:
        serve(args.serve, workdir)
    elif args.profile:
        profile(args.size, args.op, args.n if args.op == "recall" else max(20, args.n // 5), workdir)
    else:
        side_by_side([str(Path(t).resolve()) for t in args.trees], args.size, args.n, workdir)


if __name__ == "__main__":
    main()
