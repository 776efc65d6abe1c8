"""LongMemEval_S retrieval benchmark: Hindsight recall against BM25, e5 alone and their RRF.

Protocol (``bench/longmemeval/README.md``): one fresh namespace per question; every user turn of every
haystack session recorded as an episode with its session's date as ``occurred_at`` and a ``source_id``
naming session and turn; the question recalled with the question date as "now". Sessions are ranked by
their best turn. Reported: session-level recall_any@k / recall_all@k, turn-level recall@k over the
``has_answer`` turns, k = 5 and 10, overall, by question type and by split part (tune / held-out,
``_split.part_of`` on the question id), plus how many answerable questions recall left empty and how
many off-topic queries were given memories.

The baselines use the very vectors the engine stores (the default embedder, multilingual-e5-small):
  e5     — cosine of the query to every turn of the haystack;
  bm25   — the engine's own BM25 (same tokenizer and stopwords);
  rrf    — reciprocal-rank fusion of the two (k = 60).

Embedding 14k turns takes about half an hour on two cores, so document vectors are cached on disk by
the SHA-1 of their text (``--cache``); a second run embeds nothing but the queries.

    .venv/bin/python benchmarks/longmemeval.py --data ../shared/bench/longmemeval/longmemeval_dev.json \\
        --cache /tmp/quality-lme/vec --json docs/longmemeval_dev.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import CachedEmbedder, Clock, floor_margin, part_of
from locomo import OFF_TOPIC

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.embeddings.resolve import resolve_embedder
from hindsight_core.recall.keyword import KeywordIndex, tokenize

SYSTEMS = ("hindsight", "e5", "bm25", "rrf")
KS = (5, 10)


@dataclass
class Turn:
    session: str
    index: int
    text: str
    when: datetime
    answer: bool

    @property
    def source_id(self) -> str:
        return f"{self.session}#{self.index}"


@dataclass
class Question:
    qid: str
    qtype: str
    text: str
    now: datetime
    evidence_sessions: list[str]
    turns: list[Turn]

    @property
    def evidence_turns(self) -> set[str]:
        return {t.source_id for t in self.turns if t.answer}


def parse_date(raw: str) -> datetime:
    return datetime.strptime(raw.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def load(path: Path) -> list[Question]:
    questions = []
    for item in json.loads(path.read_text()):
        turns: list[Turn] = []
        seen: set[str] = set()
        for sid, date, session in zip(item["haystack_session_ids"], item["haystack_dates"],
                                      item["haystack_sessions"], strict=True):
            if sid in seen:  # a few haystacks hold a session twice: it is one conversation
                continue
            seen.add(sid)
            start = parse_date(date)
            for i, turn in enumerate(session):
                if turn["role"] != "user" or not turn["content"].strip():
                    continue
                turns.append(Turn(sid, i, turn["content"], start + timedelta(minutes=i), bool(turn.get("has_answer"))))
        questions.append(Question(item["question_id"], item["question_type"], item["question"],
                                  parse_date(item["question_date"]), list(item["answer_session_ids"]), turns))
    return questions


def sessions_of(ranked_turns: Sequence[str]) -> list[str]:
    """Sessions ranked by their best turn."""
    return list(dict.fromkeys(sid.rsplit("#", 1)[0] for sid in ranked_turns))


@dataclass
class PerQuestion:
    qid: str
    qtype: str
    part: str
    metrics: dict[str, float] = field(default_factory=dict)
    empty: bool = False
    #: best candidate's floor evidence less the anchor bar (``None``: anchored regardless, see floor_margin)
    margin: float | None = None


def measure(q: Question, ranked_turns: Sequence[str]) -> dict[str, float]:
    sessions = sessions_of(ranked_turns)
    wanted = set(q.evidence_sessions)
    turns = q.evidence_turns
    out: dict[str, float] = {}
    for k in KS:
        top = set(sessions[:k])
        out[f"session_any@{k}"] = float(bool(wanted & top))
        out[f"session_all@{k}"] = float(wanted <= top)
        if turns:
            out[f"turn@{k}"] = len(turns & set(ranked_turns[:k])) / len(turns)
    return out


def run(questions: list[Question], workdir: Path, cache: Path, *, depth: int, progress: bool,
        overrides: dict[str, Any], off_topic: bool) -> dict[str, Any]:
    clock = Clock()
    config = HindsightConfig()
    for key, value in overrides.items():
        setattr(config.recall, key, value)
    embedder = CachedEmbedder(resolve_embedder(None), cache)
    hs = Hindsight(workdir, clock=clock, config=config, embedder=embedder)
    per: dict[str, list[PerQuestion]] = {name: [] for name in SYSTEMS}
    off_topic_given = 0
    off_topic_asked = 0
    off_topic_margins: list[float | None] = []
    latency: list[float] = []
    started = time.perf_counter()
    for n, q in enumerate(questions, start=1):
        namespace = f"lme:{q.qid}"
        clock.current = q.now
        memories = hs.record_many(
            [{"content": t.text, "session_id": t.session, "occurred_at": t.when, "source_id": t.source_id,
              "role": "user"} for t in q.turns],
            namespace,
        )
        by_id = {m.id: m.source_id or "" for m in memories}
        source_ids = [t.source_id for t in q.turns]
        part = part_of(q.qid)
        t0 = time.perf_counter()
        result = hs.recall(q.text, namespace, k=depth, budget_tokens=1_000_000, now=q.now, track=False,
                           explain=True)
        latency.append((time.perf_counter() - t0) * 1000)
        ranked: list[str] = []
        for hit in result.hits:
            for sid in [hit.memory.source_id, *(by_id.get(s, "") for s in hit.memory.source_ids)]:
                if sid and sid not in ranked:
                    ranked.append(sid)
        hp = PerQuestion(q.qid, q.qtype, part, measure(q, ranked), empty=not result.hits,
                         margin=floor_margin(result))
        per["hindsight"].append(hp)
        query_vector = embedder.embed_query(q.text)
        cosine = embedder.embed_documents([t.text for t in q.turns]) @ query_vector
        e5 = [source_ids[i] for i in np.argsort(-cosine, kind="stable")]
        bm25_index = KeywordIndex([t.text for t in q.turns])
        bm25 = [source_ids[i] for i, _ in bm25_index.top(tokenize(q.text), len(q.turns))]
        fused: dict[str, float] = {}
        for ranking in (e5, bm25):
            for rank, sid in enumerate(ranking[:100], start=1):
                fused[sid] = fused.get(sid, 0.0) + 1.0 / (60 + rank)
        rrf = sorted(fused, key=lambda s: -fused[s])
        for name, ranking in (("e5", e5), ("bm25", bm25), ("rrf", rrf)):
            per[name].append(PerQuestion(q.qid, q.qtype, part, measure(q, ranking)))
        if off_topic:
            for text in OFF_TOPIC:
                off_topic_asked += 1
                res = hs.recall(text, namespace, k=10, now=q.now, track=False, explain=True)
                off_topic_given += bool(res.hits)
                off_topic_margins.append(floor_margin(res))
        if progress:
            m = hp.metrics
            print(f"[{n}/{len(questions)}] {q.qid} {q.qtype} {part}: hindsight all@10={m['session_all@10']:.0f} "
                  f"e5 all@10={per['e5'][-1].metrics['session_all@10']:.0f} hits={len(result.hits)} "
                  f"({time.perf_counter() - started:.0f}s, embedded {embedder.computed})", file=sys.stderr)
        hs.forget_namespace(namespace)
    hs.close()
    lat = sorted(latency)
    return {
        "systems": {name: summarise(rows) for name, rows in per.items()},
        "per_question": {name: [vars(r) for r in rows] for name, rows in per.items()},
        "answerable_left_empty": {p: sum(r.empty for r in per["hindsight"] if p in ("all", r.part))
                                  for p in ("all", "tune", "held")},
        "off_topic": {"asked": off_topic_asked, "given_memories": off_topic_given, "margins": off_topic_margins},
        "latency_ms": {"p50": round(statistics.median(lat), 1),
                       "p95": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 1)},
        "data": {"questions": len(questions), "turns": sum(len(q.turns) for q in questions),
                 "embedded_this_run": embedder.computed},
    }


def summarise(rows: Sequence[PerQuestion]) -> dict[str, Any]:
    def block(selected: Sequence[PerQuestion]) -> dict[str, float]:
        keys = sorted({k for r in selected for k in r.metrics})
        return {k: round(statistics.fmean([r.metrics[k] for r in selected if k in r.metrics]), 3) for k in keys}

    out: dict[str, Any] = {"all": block(rows)}
    for part in ("tune", "held"):
        out[part] = block([r for r in rows if r.part == part])
    out["by_type"] = {t: block([r for r in rows if r.qtype == t]) for t in sorted({r.qtype for r in rows})}
    return out


def table(result: dict[str, Any]) -> str:
    cols = [f"session_any@{k}" for k in KS] + [f"session_all@{k}" for k in KS] + [f"turn@{k}" for k in KS]
    lines = []
    for part in ("all", "tune", "held"):
        lines += [f"\n{part}:", "| system | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
        for name, s in result["systems"].items():
            lines.append(f"| {name} | " + " | ".join(f"{s[part].get(c, 0):.3f}" for c in cols) + " |")
    types = sorted(next(iter(result["systems"].values()))["by_type"])
    lines += ["\nsession_all@10 by question type:", "| system | " + " | ".join(types) + " |",
              "|" + "---|" * (len(types) + 1)]
    for name, s in result["systems"].items():
        cells = [f"{s['by_type'][t].get('session_all@10', 0):.2f}" for t in types]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "quality-lme" / "vec")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--depth", type=int, default=50, help="hits asked of recall (sessions are ranked by "
                        "their best turn, so more than 10 turns are needed for 10 sessions)")
    parser.add_argument("--questions", type=int, help="only the first N questions")
    parser.add_argument("--cached-only", action="store_true", help="only questions whose turns are all cached")
    parser.add_argument("--only", type=Path, help="a file of question ids, one a line: only those questions")
    parser.add_argument("--no-off-topic", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a RecallConfig field, e.g. --set fusion=rrf")
    args = parser.parse_args(argv)
    overrides = {key: json.loads(value) if value[:1] in "0123456789-[{tf" else value
                 for key, value in (item.split("=", 1) for item in args.set)}
    questions = load(args.data)[: args.questions]
    if args.only:
        wanted = set(args.only.read_text().split())
        questions = [q for q in questions if q.qid in wanted]
    if args.cached_only:
        probe = CachedEmbedder.__new__(CachedEmbedder)
        keys = {k for f in args.cache.glob("*.npz") for k in np.load(f)["keys"].tolist()}
        questions = [q for q in questions if all(probe.key(t.text) in keys for t in q.turns)]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="quality-lme-") as tmp:
        result = run(questions, Path(tmp) / "engine", args.cache, depth=args.depth, progress=not args.quiet,
                     overrides=overrides, off_topic=not args.no_off_topic)
    result["overrides"] = overrides
    result["data"]["total_seconds"] = round(time.perf_counter() - started, 1)
    print(table(result))
    summary = {k: result[k] for k in ("answerable_left_empty", "latency_ms", "data")}
    summary["off_topic"] = {k: v for k, v in result["off_topic"].items() if k != "margins"}
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
