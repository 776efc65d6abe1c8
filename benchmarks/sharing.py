"""A second agent with and without a shared layer (issue 32): does it inherit what the first one learned?

On each LoCoMo development conversation, a first agent (``locomo-a:<id>``) lives through the whole
conversation (one episodic memory per turn, ``source_id`` = its ``dia_id``, recorded as the consolidation
benchmark records it) and consolidates it with the offline ``RuleExtractor``: its semantic layer is what
it *learned*, each fact citing the turns it was distilled from. A second agent (``locomo-b:<id>``) then
meets the same conversation from its start (recorded as the LoCoMo runner records it). At checkpoints
of its first N turns it is asked the conversation's questions (categories 1-4) whose evidence the first
agent learned (every evidence turn cited by one of its active facts), twice: with
``grant(first, to=second)`` in force and with ``shared=False``. The metric is LoCoMo's evidence
recall@10: the share of a question's evidence turns covered by the top 10 hits (an episode covers its
own turn, a fact the turns it cites, whichever agent holds it). Without the shared layer the second agent
can only know what it has heard so far; the seed claims a shared layer cuts that cold-start period
roughly in half.

The rule extractor distils few of LoCoMo's narrative turns (docs/benchmark-log.md, "Consolidation"), so
the questions measured are the ones whose evidence it caught; an LLM extractor would give the shared
layer more to share, not change what the grant does.

    .venv/bin/python benchmarks/sharing.py --data ../shared/bench/locomo/locomo_dev.json \
        [--cache /tmp/hindsight-bench/locomo-vec] [--checkpoints 0 50 100 200 400] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import CachedEmbedder, Clock, named_embedder
from benchmarks.locomo import Conversation, Question, load
from hindsight_core import Hindsight, Layer, Memory, Status

K = 10
CHECKPOINTS = (0, 50, 100, 200, 400)


def _namespace(prefix: str, conv: Conversation) -> str:
    return f"{prefix}:{re.sub(r'[^A-Za-z0-9_.:-]', '_', conv.sample_id)}"


def _record(hs: Hindsight, namespace: str, conv: Conversation, start: int, end: int, *, named: bool) -> None:
    """Turns ``start:end`` as episodes, the speaker as role; ``named``: the speaker's name also opens the
    text, as the LoCoMo runner records it (its questions name the speakers), else the text alone, as the
    consolidation benchmark records it (the rule extractor reads first-person statements, "I've been …",
    and takes the subject's name from the role)."""
    turns = conv.turns[start:end]
    if turns:
        hs.record_many([{"content": t.text if named else t.text.split(": ", 1)[-1], "session_id": t.session,
                         "occurred_at": t.when, "source_id": t.dia_id, "role": t.text.split(":", 1)[0]}
                        for t in turns], namespace)


def _covered(memory: Memory, dia_of: dict[str, str]) -> set[str]:
    """The turns a hit covers: an episode its own, a distilled memory those it cites (either agent's)."""
    own = {memory.source_id} if memory.source_id else set()
    return own | {dia_of[s] for s in memory.source_ids if s in dia_of}


def _recall_at_k(hs: Hindsight, q: Question, namespace: str, conv: Conversation, dia_of: dict[str, str],
                 shared: bool) -> float:
    result = hs.recall(q.text, namespace, k=K, budget_tokens=100_000, now=conv.now, track=False, shared=shared)
    covered = set().union(*(_covered(h.memory, dia_of) for h in result.hits)) if result.hits else set()
    return len(covered & set(q.evidence)) / len(q.evidence)


def run(conversations: Sequence[Conversation], workdir: Path, checkpoints: Sequence[int],
        cache: Path | None) -> dict[str, Any]:
    embedder = named_embedder("default")
    if cache is not None:
        embedder = CachedEmbedder(embedder, cache)
    clock = Clock()
    rows: list[dict[str, Any]] = []
    learned_share: list[float] = []
    with Hindsight(workdir, clock=clock, embedder=embedder, background_consolidation=False) as hs:
        for conv in conversations:
            first, second = _namespace("locomo-a", conv), _namespace("locomo-b", conv)
            clock.current = conv.now
            _record(hs, first, conv, 0, len(conv.turns), named=False)
            hs.consolidate(first)
            episodes = hs.find(first, layer=Layer.EPISODIC)
            dia_of = {m.id: m.source_id for m in episodes if m.source_id}
            facts = [m for m in hs.find(first, layer=Layer.SEMANTIC) if m.status == Status.ACTIVE]
            learned = {dia_of[s] for m in facts for s in m.source_ids if s in dia_of}
            asked = [q for q in conv.questions if q.category in (1, 2, 3, 4)]
            measured = [q for q in asked if set(q.evidence) <= learned]
            learned_share.append(len(measured) / max(len(asked), 1))
            hs.grant(first, to=second)
            heard = 0
            for c in sorted(set(checkpoints)):  # a conversation shorter than c is heard whole by then
                n = min(c, len(conv.turns))
                _record(hs, second, conv, heard, n, named=True)
                heard = n
                for q in measured:  # the second agent's episodes carry their own dia_id as source_id
                    rows.append({"conversation": conv.sample_id, "turns_heard": c, "category": q.category,
                                 "with_shared": _recall_at_k(hs, q, second, conv, dia_of, True),
                                 "without": _recall_at_k(hs, q, second, conv, dia_of, False)})
            print(f"{conv.sample_id}: {len(facts)} facts learned, {len(measured)} of {len(asked)} questions "
                  f"measured", flush=True)
    by_n: dict[str, dict[str, float]] = {}
    for n in sorted({r["turns_heard"] for r in rows}):
        at = [r for r in rows if r["turns_heard"] == n]
        by_n[str(n)] = {"questions": len(at),
                        "with_shared": round(statistics.fmean(r["with_shared"] for r in at), 4),
                        "without": round(statistics.fmean(r["without"] for r in at), 4)}
    return {"checkpoints": by_n, "questions_measured_share": round(statistics.fmean(learned_share), 4),
            "conversations": len(conversations), "k": K, "rows": rows}


def table(result: dict[str, Any]) -> str:
    lines = ["| turns the second agent has heard (at most) | questions | recall@10 with the shared layer | without |",
             "|---:|---:|---:|---:|"]
    for n, row in result["checkpoints"].items():
        lines.append(f"| {n} | {row['questions']} | {row['with_shared']:.3f} | {row['without']:.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=None, help="disk cache of the default model's vectors")
    parser.add_argument("--checkpoints", type=int, nargs="+", default=list(CHECKPOINTS))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result = run(load(args.data), Path(tmp), args.checkpoints, args.cache)
    print(table(result))
    print(f"questions whose evidence the first agent learned: {result['questions_measured_share']:.1%} of "
          "categories 1-4")
    if args.json:
        args.json.write_text(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
