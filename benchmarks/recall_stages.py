"""Where a cached recall's time goes, stage by stage, on a namespace ``scale.py --workdir`` loaded; and
whether two checkouts rank the same on it.

    PYTHONPATH=<tree> .venv/bin/python benchmarks/recall_stages.py --workdir DIR --size 100000 [--chat]
    PYTHONHASHSEED=0 PYTHONPATH=<tree> .venv/bin/python benchmarks/recall_stages.py --workdir DIR \
        --size 100000 --dump OUT.json          # the results and traces of 150 recalls, exact vector scan
    .venv/bin/python benchmarks/recall_stages.py --compare A.json B.json

Stages are timed by wrapping the functions each calls with a thread-CPU-time counter (no profiler:
cProfile doubles the cost of Python-heavy stages and not of numpy ones); run each tree in turn,
several times, on a shared machine. ``--chat`` uses turns of the conversation as the queries, as the
chat loop of ``scale.py`` does (more terms, frequent words and a name every fourth turn carries);
otherwise ``scale.py``'s questions.

``--dump`` recalls untracked (nothing changes in the store) with the vector channel as an exact scan,
because the HNSW index answers a little differently from one process to the next; a fixed
``PYTHONHASHSEED`` makes the sums over term sets add in one order. Two dumps are then equal when the
two trees rank the same: every channel's list, the fused scores, the floor's evidence, the hits and
their collapsed sources."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import Conversations, settle

from hindsight_core import Hindsight
from hindsight_core.config import HindsightConfig
from hindsight_core.embeddings.hashed import HashedWordEmbedder

NAMESPACE = "user:bench"


def scale_queries(size: int, n: int) -> list[str]:
    """The questions ``scale.py`` asks of a namespace of ``size`` (the same draws)."""
    conv = Conversations(seed=size)
    conv.events(min(size, 1000), prefix="probe")
    for done in range(0, size, 2000):
        conv.events(min(2000, size - done), offset=done)
    return [conv.query() for _ in range(n)]


def stage_times(path: Path, queries: list[str], repeats: int) -> tuple[list[float], dict[str, float]]:
    """Thread CPU per recall, and per stage the CPU summed over the timed recalls."""
    from hindsight_core.recall import channels, keyword, pipeline
    from hindsight_core.store import demotions, sql

    spent: dict[str, float] = {}

    def wrap(owner: Any, name: str, label: str) -> None:
        found = getattr(owner, name, None)
        if found is None:  # a stage this checkout does not have
            return

        @functools.wraps(found)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.thread_time()
            try:
                return found(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.thread_time() - t

        setattr(owner, name, timed)

    p = pipeline.RecallPipeline
    for owner, name, label in [
        (keyword.KeywordView, "sparse", "keyword: BM25 of the matches"),
        (channels, "keyword_channel", "keyword channel (top)"),
        (p, "_vector_channel", "vector channel (index query)"),
        (p, "_activation_channel", "activation channel"),
        (channels, "temporal_channel", "temporal channel"),
        (channels, "entity_channel", "entity channel"),
        (channels, "profile_channel", "profile channel"),
        (pipeline, "candidate_pool", "candidate pool"),
        (pipeline, "with_neighbours", "pool + neighbours"),
        (pipeline, "zsum", "fusion (zsum)"),
        (sql.RelationalStore, "get_many_in", "candidates' fresh rows"),
        (sql.RelationalStore, "activations_in", "candidates' current activation"),
        (demotions, "demoted_among", "demotions"),
        (pipeline, "LanguageBaselines", "the query's baselines"),
        (p, "_requested", "requested kinds, question about the asker"),
        (p, "_about_asker", "requested kinds, question about the asker"),
        (p, "_offers", "profile channel (offers)"),
        (pipeline, "_content_free", "small talk left out"),
        (p, "_live", "live candidates"),
        (pipeline.Corpus, "prompting_turn", "bare answers' questions"),
        (pipeline, "keyword_coverage", "keyword coverage"),
        (p, "_updates", "recall-time updates"),
        (p, "_starting_yields", "starting memories yield"),
        (p, "_echoed", "echoes bring their statement"),
        (p, "_final_scores", "final scores"),
        (p, "_two_sided_z", "floor z-scores"),
        (pipeline, "apply_floor", "floor decision"),
        (p, "_collapse", "collapse"),
        (pipeline, "pack", "packing (token counts)"),
        (pipeline, "analyze", "query analysis"),
        (p, "_candidates", "= channels to floor, all"),
        (p, "run", "= recall, all"),
    ]:
        wrap(owner, name, label)
    with Hindsight(path, embedder=HashedWordEmbedder()) as hs:
        hs.recall(queries[0], NAMESPACE, track=False)
        settle(hs)
        for q in queries[:30]:  # warm
            hs.recall(q, NAMESPACE, track=False)
        spent.clear()
        per_recall: list[float] = []
        for i in range(repeats):
            t = time.thread_time()
            hs.recall(queries[i % len(queries)], NAMESPACE, track=False)
            per_recall.append(time.thread_time() - t)
    return per_recall, spent


def dump(path: Path, size: int, out: Path) -> None:
    conv = Conversations(seed=size + 1)
    words = conv.words
    queries = [conv.query() for _ in range(60)] + [conv.text() for _ in range(60)]
    queries += [f"What did we talk about last time about {words[i]}?" for i in range(0, 40, 4)]
    queries += [f"What did I say about {words[i]} in January 2024?" for i in range(1, 40, 4)]
    queries += [f"Remember what {words[i]} said yesterday about {words[i + 1]}?" for i in range(2, 40, 4)]
    config = HindsightConfig()
    config.recall.exact_vector_max_memories = 10**9
    now = datetime(2026, 1, 1, tzinfo=UTC)
    rows = []
    with Hindsight(path, embedder=HashedWordEmbedder(), config=config) as hs:
        for q in queries:
            r = hs.recall(q, NAMESPACE, track=False, explain=True, now=now)
            assert r.trace is not None
            rows.append({"query": q, "hits": [(h.memory.id, h.score, [s.id for s in h.sources]) for h in r.hits],
                         "trace": r.trace.model_dump(mode="json")})
    out.write_text(json.dumps(rows))
    print(f"{len(rows)} recalls of {path} written to {out}")


def compare(a: Path, b: Path) -> int:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    same = sum(x == y for x, y in zip(left, right, strict=True))
    print(f"{same} of {len(left)} recalls identical (hits, scores, sources and the whole trace); "
          f"{sum(bool(x['hits']) for x in left)} with hits")
    for x, y in zip(left, right, strict=True):
        if x != y:
            part = next((k for k in x["trace"] if x["trace"][k] != y["trace"].get(k)), "hits")
            print(f"  differs in {part}: {x['query'][:60]}")
    return 0 if same == len(left) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, help="a scale.py --workdir with the size loaded")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--recalls", type=int, default=300)
    parser.add_argument("--chat", action="store_true", help="the conversation's turns as queries")
    parser.add_argument("--dump", type=Path, help="write results and traces for --compare")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    path = args.workdir / f"n{args.size}"
    if not (path / f"loaded-{args.size}").exists():
        parser.error(f"{path} is not loaded: run scale.py --sizes {args.size} --workdir {args.workdir} first")
    if args.dump:
        dump(path, args.size, args.dump)
        return 0
    if args.chat:
        conv = Conversations(seed=3)
        queries = [conv.text() for _ in range(100)]
    else:
        queries = scale_queries(args.size, 100)
    per_recall, spent = stage_times(path, queries, args.recalls)
    n = len(per_recall)
    print(f"{args.size:,} memories, {'chat turns' if args.chat else 'questions'}: recall thread CPU median "
          f"{np.median(per_recall) * 1e3:.2f} ms, mean {np.mean(per_recall) * 1e3:.2f} ms ({n} recalls)")
    print("| stage | CPU per recall, mean |\n|---|---|")
    for label, total in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"| {label} | {total / n * 1e3:.3f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
