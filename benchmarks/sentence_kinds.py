"""How the two sentence-kind classifiers (``hindsight_core/recall/sentence_kinds.py``) label sentences
they were not fitted on: which queries count as requests (and so are offered standing facts), and
which person turns count as standing states, and which memories state a change (recall-time updates).

- cross-validation on the labelled examples themselves (5 folds);
- LongMemEval_S questions by type (only the preference questions are requests);
- LoCoMo questions (questions about people's pasts: none should be a request), its turns (how many
  state a change), and the off-topic queries of ``locomo.py`` and ``longmemeval.py``;
- the quality cases' queries and the user turns of their conversations, listed with their scores.

    .venv/bin/python benchmarks/sentence_kinds.py --locomo ../shared/bench/locomo/locomo_dev.json \\
        --longmemeval ../shared/bench/longmemeval/longmemeval_dev.json \\
        --cases benchmarks/scenarios/quality_cases.json [--cache /work/cache/locomo] [--list]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import CachedEmbedder
from locomo import OFF_TOPIC, load

from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.recall import sentence_kinds as sk


def cross_validated_errors(embedder: E5Embedder, positive: tuple[str, ...], negative: tuple[str, ...],
                           as_query: bool, folds: int = 5) -> tuple[int, int]:
    def embed(texts: tuple[str, ...]) -> np.ndarray:
        if as_query:
            return np.stack([embedder.embed_query(t) for t in texts])
        return embedder.embed_documents(list(texts))

    pos, neg = embed(positive), embed(negative)
    rng = np.random.default_rng(0)
    pos_fold, neg_fold = rng.permutation(len(pos)) % folds, rng.permutation(len(neg)) % folds
    errors = 0
    for f in range(folds):
        weights, bias = sk._ridge(pos[pos_fold != f], neg[neg_fold != f], sk.ALPHA)
        errors += int(((pos[pos_fold == f] @ weights + bias) <= 0).sum())
        errors += int(((neg[neg_fold == f] @ weights + bias) > 0).sum())
    return errors, len(pos) + len(neg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--cases", type=Path, required=True)
    parser.add_argument("--cache", type=Path, help="LoCoMo's vector cache (locomo.py --cache), to embed no turn twice")
    parser.add_argument("--list", action="store_true", help="print every quality-case sentence with its score")
    args = parser.parse_args()
    embedder = E5Embedder()
    kinds = sk.for_embedder(embedder)
    bar = 0.0

    def request(text: str) -> float:
        return kinds.request(embedder.embed_query(text))

    statements = (*sk.NOT_CHANGES, *sk.STANDING, *sk.NOT_STANDING)
    for name, positive, negative, as_query in (("requests", sk.REQUESTS, sk.NOT_REQUESTS, True),
                                               ("standing states", sk.STANDING, sk.NOT_STANDING, False),
                                               ("changes", sk.CHANGES, statements, False)):
        errors, n = cross_validated_errors(embedder, positive, negative, as_query)
        print(f"cross-validated errors on the examples, {name}: {errors} of {n}")
    lme = json.loads(args.longmemeval.read_text(encoding="utf-8"))
    by_type: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    for q in lme:
        asked[q["question_type"]] += 1
        by_type[q["question_type"]] += request(q["question"]) > bar
    print("LongMemEval questions taken for requests, by type:")
    for qtype in sorted(asked):
        print(f"  {qtype}: {by_type[qtype]} of {asked[qtype]}")
    locomo = json.loads(args.locomo.read_text(encoding="utf-8"))
    questions = [qa["question"] for conv in locomo for qa in conv["qa"]]
    scores = np.array([request(q) for q in questions])
    print(f"LoCoMo questions taken for requests: {int((scores > bar).sum())} of {len(questions)}")
    turns = [t.text for conv in load(args.locomo) for t in conv.turns]
    documents = CachedEmbedder(embedder, args.cache) if args.cache else embedder
    changes = kinds.change(documents.embed_documents(turns))
    print(f"LoCoMo turns taken for changes (the newer side of a recall-time update): "
          f"{int((changes > 0).sum())} of {len(turns)}")
    off = [request(q) for q in OFF_TOPIC]
    print(f"off-topic queries taken for requests: {sum(s > bar for s in off)} of {len(off)} "
          f"(highest score {max(off):+.2f})")
    cases = json.loads(args.cases.read_text(encoding="utf-8"))
    queries = [q["text"] for c in cases for q in c["queries"]]
    turns = sorted({t for c in cases for s in c["sessions"] for role, t in s["turns"] if role == "user"})
    turn_scores = kinds.standing(embedder.embed_documents(turns))
    query_scores = [request(q) for q in queries]
    print(f"quality cases: {sum(s > bar for s in query_scores)} of {len(queries)} queries are requests, "
          f"{int((turn_scores > 0).sum())} of {len(turns)} user turns state a standing state")
    if args.list:
        for s, q in sorted(zip(query_scores, queries, strict=True)):
            print(f"  request {s:+.2f}  {q}")
        for s, t in sorted(zip(turn_scores.tolist(), turns, strict=True)):
            print(f"  standing {s:+.2f}  {t}")


if __name__ == "__main__":
    main()
