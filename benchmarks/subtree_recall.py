"""What recalling a user's whole root costs (``recall(..., subtree=True)``) next to recalling the root
alone, for a root with 0, 2, 4 and 8 children (a store namespace, notes, ...). The same memories are
spread over the root and its children, so the figures separate the per-namespace cost (one snapshot,
one Chroma query per layer, one floor per child) from the amount of memory searched.

    .venv/bin/python benchmarks/subtree_recall.py --memories 400 --queries 30
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import USER_TURNS as USER
from _report import median_ms as _ms
from _report import timed as _timed
from _report import write_section

from hindsight_core import Hindsight
from hindsight_core.embeddings.e5 import E5Embedder

ROOT = "user:bench"
QUERIES = [
    "What am I allergic to?", "How much can I spend in Lisbon?", "我住在哪里？", "Any dinner plans on Friday?",
    "What did I say about restaurants?", "预算是多少？",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=400)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    rows = []
    embedder = E5Embedder()
    for children in (0, 2, 4, 8):
        with tempfile.TemporaryDirectory() as tmp, Hindsight(tmp, embedder=embedder) as hs:
            root = ROOT
            spaces = [root] + [f"{root}/child{i}" for i in range(children)]
            for i in range(args.memories):
                ns = spaces[i % len(spaces)]
                hs.record(f"{USER[i % len(USER)]} (note {i})", ns, session_id=f"s{i // 20}")
            for q in QUERIES:  # warm: snapshots, the query embedder, background vectors
                hs.recall(q, root, subtree=True)
            exact = _timed(lambda i: hs.recall(QUERIES[i % len(QUERIES)], ROOT, track=False), args.queries)
            tree = _timed(lambda i: hs.recall(QUERIES[i % len(QUERIES)], ROOT, subtree=True, track=False),
                          args.queries)
            found = sum(len(hs.recall(q, root, subtree=True, track=False).hits) for q in QUERIES)
            rows.append((children, len(hs.store.select("namespace = ?", [root])), _ms(exact), _ms(tree), found))
    lines = [
        "## Subtree recall: a user's root and its children (issue 14)",
        "",
        f"`python benchmarks/subtree_recall.py --memories {args.memories} --queries {args.queries}` "
        f"({platform.processor() or platform.machine()}, embedded SQLite + Chroma, median of {args.queries} "
        "recalls, `track=False`). The same memories spread over the root and its children; "
        "`exact` recalls the root alone, `subtree` the root and every child as one ranking.",
        "",
        "| children | memories in the root | exact ms | subtree ms | hits over the 6 queries (subtree) |",
        "|---:|---:|---:|---:|---:|",
        *[f"| {c} | {n} | {e} | {t} | {h} |" for c, n, e, t, h in rows],
    ]
    body = "\n".join(lines)
    print(body)
    write_section("subtree-recall", body)


if __name__ == "__main__":
    main()
