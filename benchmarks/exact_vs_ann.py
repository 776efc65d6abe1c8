"""Where an exact scan of a namespace's vectors stops being cheaper than a Chroma query: the crossover
behind ``recall.exact_vector_max_memories``.

For each size, the same vectors (``scale.py``'s hash embedder on its synthetic conversations) go into
the engine's Chroma index (one collection for the namespace and layer) and into a float32 matrix, as
the recall snapshot holds them. Each query is answered both ways, alternating which goes first:

- the index: ``ChromaVectorIndex.query`` for the per-channel 25, as the vector channel calls it;
- the scan: one matrix-vector product and ``channels.best_first`` (a partial sort, the layer check on
  the prefix only), as ``channels.vector_from_snapshot`` runs it.

It reports the median of each, their ratio, and how many of Chroma's top 25 are in the exact top 25
(HNSW is approximate; the scan is exact by construction).

    .venv/bin/python benchmarks/exact_vs_ann.py [--sizes 100,1000,10000,20000,50000] [--queries 200]
        [--write-doc]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section
from scale import Conversations

from hindsight_core.embeddings.hashed import HashedWordEmbedder
from hindsight_core.recall.channels import best_first
from hindsight_core.vectors.chroma import ChromaVectorIndex

N = 25
NS, LAYER = "user:bench", "episodic"


def measure(size: int, queries: int, root: Path) -> dict[str, float]:
    embedder, conv = HashedWordEmbedder(), Conversations(seed=size)
    texts = [conv.text() for _ in range(size)]
    vectors = embedder.embed_documents(texts)
    ids = [f"m{i}" for i in range(size)]
    index = ChromaVectorIndex(root / f"chroma-{size}")
    for start in range(0, size, 5000):
        chunk = slice(start, start + 5000)
        index.upsert(NS, LAYER, ids[chunk], vectors[chunk], ["turn"] * len(ids[chunk]))
    layers = np.zeros(size, dtype=np.int8)  # one layer, checked per row of the prefix as recall does
    asked = [embedder.embed_query(conv.query()) for _ in range(queries)]

    def scan(q: np.ndarray) -> list[str]:
        scores = vectors @ q
        return [ids[i] for i in best_first(scores, N, lambda i: int(layers[i]) == 0)]

    def ann(q: np.ndarray) -> list[str]:
        return [hit.memory_id for hit in index.query(NS, LAYER, q, N)]

    for q in asked[:5]:  # warm: the collection loaded, BLAS threads up
        scan(q)
        ann(q)
    times: dict[str, list[float]] = {"scan": [], "ann": []}
    overlap: list[float] = []
    for j, q in enumerate(asked):
        found: dict[str, list[str]] = {}
        for name, fn in (("scan", scan), ("ann", ann)) if j % 2 == 0 else (("ann", ann), ("scan", scan)):
            start = time.perf_counter()
            found[name] = fn(q)
            times[name].append(time.perf_counter() - start)
        overlap.append(len(set(found["scan"]) & set(found["ann"])) / min(N, size))
    scan_ms = statistics.median(times["scan"]) * 1000
    ann_ms = statistics.median(times["ann"]) * 1000
    return {"size": size, "scan": scan_ms, "ann": ann_ms, "ratio": scan_ms / ann_ms,
            "overlap": statistics.mean(overlap)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000,20000,50000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--write-doc", action="store_true", help="write the table into docs/benchmark-log.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="exact-vs-ann-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            rows.append(measure(size, args.queries, Path(tmp)))
            r = rows[-1]
            print(f"{size:>7,}: scan {r['scan']:.3f} ms, Chroma {r['ann']:.3f} ms, scan/Chroma {r['ratio']:.2f}x, "
                  f"top-{N} overlap {r['overlap']:.3f}", flush=True)
    table = ["| memories | exact scan, ms | Chroma query, ms | scan / Chroma | Chroma's top 25 in the exact top 25 |",
             "|---|---|---|---|---|"]
    table += [f"| {r['size']:,.0f} | {r['scan']:.3f} | {r['ann']:.3f} | {r['ratio']:.2f}x | {r['overlap']:.3f} |"
              for r in rows]
    print("\n" + "\n".join(table))
    if args.write_doc:
        command = f"benchmarks/exact_vs_ann.py --sizes {args.sizes} --queries {args.queries}"
        write_section("exact-vs-ann", f"`{command}`, medians of {args.queries} queries, alternating:\n\n"
                      + "\n".join(table))


if __name__ == "__main__":
    main()
