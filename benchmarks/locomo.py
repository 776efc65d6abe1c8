"""LoCoMo retrieval benchmark: Hindsight recall against the memories a user would otherwise pick.

Every turn of every conversation is recorded as one episodic memory (``source_id`` = its ``dia_id``,
``occurred_at`` = its session's date, ``session_id`` = its session); every question is asked at a
clock just after the last session. Metric (see ``bench/locomo/README.md``): evidence recall@k, the
share of a question's evidence turns covered by the source ids of the top k memories.

Baselines, on the same embedder and the same stored vectors:
  recency  — the last k turns (what ``ConversationBufferWindowMemory`` shows);
  vector   — top-k by cosine from the same Chroma index (what ``VectorStoreRetrieverMemory`` does);
  bm25     — top-k by BM25 over the same turns, same tokenizer and stopwords.

    .venv/bin/python benchmarks/locomo.py --data ../shared/bench/locomo/locomo_dev.json \\
        --k 5 10 20 --json docs/locomo_dev.json --plot docs/locomo_dev.png
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import CachedEmbedder, Clock, floor_margin, named_embedder, part_of

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.recall.keyword import KeywordIndex, tokenize
from hindsight_core.types import Memory

SYSTEMS = ("hindsight", "vector", "bm25", "recency")

#: Questions about things these conversations never mention; every system but Hindsight fills k slots.
OFF_TOPIC = (
    "What is the torque specification for the cylinder head bolts of my diesel engine?",
    "How do I configure BGP peering on a Juniper router?",
    "What dosage of amoxicillin did the veterinarian prescribe for my horse?",
    "Which cryptocurrency wallet did I use to buy Ethereum?",
    "What did my accountant say about depreciation of the warehouse forklift?",
    "How many calories are in a bowl of Korean kimchi jjigae?",
    "What is the airspeed velocity of an unladen swallow?",
    "Which Kubernetes version are we running on the staging cluster?",
    "我的车险理赔进展到哪一步了？",
    "What was the final score of the cricket match between Pakistan and New Zealand?",
)


@dataclass
class Turn:
    dia_id: str
    session: str
    text: str
    when: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    now: datetime
    malformed_evidence: int = 0
    skipped_questions: int = 0


def parse_when(raw: str) -> datetime:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(raw.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    import dateparser

    parsed = dateparser.parse(raw, settings={"TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": True})
    if parsed is None:
        raise ValueError(f"unreadable session date {raw!r}")
    return parsed


def load(path: Path) -> list[Conversation]:
    conversations: list[Conversation] = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), key)
            for key in conv
            if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(conv[key], list)
        )
        turns: list[Turn] = []
        last = None
        for number, key in sessions:
            start = parse_when(conv.get(f"{key}_date_time", ""))
            for i, turn in enumerate(conv[key]):
                text = f"{turn.get('speaker', '?')}: {turn.get('text', '')}".strip()
                if turn.get("blip_caption"):
                    text += f" [shares an image: {turn['blip_caption']}]"
                when = start + timedelta(minutes=i)
                turns.append(Turn(str(turn["dia_id"]), f"session_{number}", text, when))
                last = when
        if last is None:
            continue
        known = {t.dia_id for t in turns}
        questions: list[Question] = []
        malformed = skipped = 0
        for qa in sample.get("qa", []):
            evidence: list[str] = []
            for raw in qa.get("evidence", []):
                ids = [raw] if raw in known else [p for p in re.split(r"[;,\s]+", str(raw)) if p]
                for ev in ids:
                    if ev in known:
                        evidence.append(ev)
                    else:
                        malformed += 1
            if not evidence:
                skipped += 1
                continue
            questions.append(Question(str(qa["question"]), int(qa.get("category", 0)), list(dict.fromkeys(evidence))))
        conversations.append(
            Conversation(str(sample.get("sample_id", len(conversations))), turns, questions,
                         last + timedelta(hours=1), malformed, skipped)
        )
    return conversations


@dataclass
class Scores:
    recall: dict[int, list[tuple[int, float]]] = field(default_factory=dict)  # k -> [(category, recall)]
    tokens: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)
    #: one row per question: conversation part (tune / held), category, recall@k by k (paired comparisons)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, category: int, evidence: Sequence[str], ranked: Sequence[tuple[Sequence[str], int]],
            ks: Sequence[int], latency: float, part: str = "all") -> None:
        wanted = set(evidence)
        row: dict[str, Any] = {"part": part, "category": category}
        for k in ks:
            covered = {s for sources, _ in ranked[:k] for s in sources}
            self.recall.setdefault(k, []).append((category, len(wanted & covered) / len(wanted)))
            row[f"recall@{k}"] = len(wanted & covered) / len(wanted)
            self.tokens.setdefault(k, []).append((category, sum(t for _, t in ranked[:k])))
        self.rows.append(row)
        self.latency_ms.append(latency * 1000)

    def parts(self, ks: Sequence[int]) -> dict[str, dict[str, float]]:
        """Recall@k over categories 1-4 for each part of the split."""
        out: dict[str, dict[str, float]] = {}
        for part in sorted({r["part"] for r in self.rows}):
            rows = [r for r in self.rows if r["part"] == part and r["category"] in (1, 2, 3, 4)]
            out[part] = {f"recall@{k}": round(statistics.fmean(r[f"recall@{k}"] for r in rows), 4) for k in ks}
            out[part]["questions"] = len(rows)
            for c in (1, 2, 3, 4, 5):
                cat = [r["recall@10"] for r in self.rows
                       if r["part"] == part and r["category"] == c and "recall@10" in r]
                if cat:
                    out[part][f"cat{c}@10"] = round(statistics.fmean(cat), 4)
        return out

    def summary(self, ks: Sequence[int]) -> dict[str, Any]:
        def block(categories: set[int] | None) -> dict[str, float]:
            out: dict[str, float] = {}
            for k in ks:
                values = [r for c, r in self.recall[k] if categories is None or c in categories]
                toks = [t for c, t in self.tokens[k] if categories is None or c in categories]
                out[f"recall@{k}"] = round(statistics.fmean(values), 4) if values else 0.0
                out[f"tokens@{k}"] = round(statistics.fmean(toks), 1) if toks else 0.0
            return out

        cats = sorted({c for c, _ in self.recall[ks[0]]})
        lat = sorted(self.latency_ms)
        return {
            "cat1-4": block({1, 2, 3, 4}),
            "all": block(None),
            "per_category": {str(c): {f"recall@{k}": block({c})[f"recall@{k}"] for k in ks} for c in cats},
            "parts": self.parts(ks),
            "latency_ms": {
                "p50": round(statistics.median(lat), 2),
                "p95": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2),
            },
        }


def run(conversations: list[Conversation], ks: Sequence[int], workdir: Path, progress: bool,
        overrides: dict[str, Any] | None = None, cache: Path | None = None, embedder_name: str = "default",
        ) -> dict[str, Any]:
    clock = Clock()
    config = HindsightConfig()
    for key, value in (overrides or {}).items():
        setattr(config.recall, key, value)

    embedder = named_embedder(embedder_name)
    if cache is not None:
        embedder = CachedEmbedder(embedder, cache if embedder_name == "default" else cache / embedder_name)
    hs = Hindsight(workdir, clock=clock, config=config, embedder=embedder)
    tokens = hs.tokens
    scores = {name: Scores() for name in SYSTEMS}
    off_topic_hits: dict[str, int] = {}
    off_topic_by_part: dict[str, int] = {}
    off_topic_margins: dict[str, list[float | None]] = {}
    kmax = max(ks)
    record_s = 0.0
    n_turns = 0
    for conv in conversations:
        namespace = f"locomo:{re.sub(r'[^A-Za-z0-9_.:-]', '_', conv.sample_id)}"
        clock.current = conv.now
        if hs.store.has_namespace(namespace) and not _complete(hs, namespace, conv):
            hs.forget_namespace(namespace)
        start = time.perf_counter()
        memories = hs.record_many(
            [{"content": t.text, "session_id": t.session, "occurred_at": t.when, "source_id": t.dia_id,
              "role": t.text.split(":", 1)[0]} for t in conv.turns],
            namespace, progress=progress,
        )
        record_s += time.perf_counter() - start
        n_turns += len(memories)
        ids = [m.id for m in memories]
        cost = {m.id: tokens.count(m.content) for m in memories}
        dia = {m.id: [m.source_id] if m.source_id else [] for m in memories}
        bm25 = KeywordIndex([m.content for m in memories])

        part = part_of(conv.sample_id)

        def timed(name: str, q: Question, fn: Callable[[], list[str]], dia: dict[str, list[str]] = dia,
                  cost: dict[str, int] = cost, part: str = part) -> None:
            t0 = time.perf_counter()
            top = fn()
            scores[name].add(q.category, q.evidence, [(dia[i], cost[i]) for i in top], ks, time.perf_counter() - t0,
                             part)

        for q in conv.questions:
            t0 = time.perf_counter()
            res = hs.recall(q.text, namespace, k=kmax, budget_tokens=100_000, now=conv.now, explain=True)
            elapsed = time.perf_counter() - t0
            ranked = [(_evidence(h.memory, dia), tokens.count(_body(h.text))) for h in res.hits]
            scores["hindsight"].add(q.category, q.evidence, ranked, ks, elapsed, part)
            scores["hindsight"].rows[-1].update(empty=not res.hits, margin=floor_margin(res))
            timed("vector", q, partial(_vector_top, hs, namespace, q.text, kmax))
            timed("bm25", q, partial(_bm25_top, bm25, ids, q.text, kmax))
            timed("recency", q, partial(_recent, ids, kmax))
        off = [hs.recall(text, namespace, k=10, now=conv.now, explain=True) for text in OFF_TOPIC]
        hits = [len(r.hits) for r in off]
        off_topic_margins.setdefault(part, []).extend(floor_margin(r) for r in off)
        off_topic_hits[conv.sample_id] = sum(hits)
        off_topic_by_part[part] = off_topic_by_part.get(part, 0) + sum(bool(h) for h in hits)
        if progress:
            print(f"{conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions, "
                  f"off-topic hits {sum(hits)}", file=sys.stderr)
    hs.close()
    return {
        "systems": {name: s.summary(ks) for name, s in scores.items()},
        "per_question": {name: s.rows for name, s in scores.items()},
        "off_topic": {"queries": len(OFF_TOPIC), "hits_per_conversation": off_topic_hits,
                      "queries_given_memories_by_part": off_topic_by_part, "margins": off_topic_margins},
        "data": {
            "conversations": len(conversations),
            "turns": n_turns,
            "questions": sum(len(c.questions) for c in conversations),
            "malformed_evidence_ids": sum(c.malformed_evidence for c in conversations),
            "questions_without_valid_evidence": sum(c.skipped_questions for c in conversations),
            "record_seconds": round(record_s, 1),
        },
    }


def _vector_top(hs: Hindsight, namespace: str, text: str, k: int) -> list[str]:
    """VectorStoreRetrieverMemory: embed the query, nearest k from the same Chroma collection."""
    return [h.memory_id for h in hs.vectors.query(namespace, "episodic", hs.embedder.embed_query(text), k)]


def _bm25_top(index: KeywordIndex, ids: list[str], text: str, k: int) -> list[str]:
    return [ids[i] for i, _ in index.top(tokenize(text), k)]


def _recent(ids: list[str], k: int) -> list[str]:
    """ConversationBufferWindowMemory(k): the last k turns."""
    return ids[-k:][::-1]


def _body(text: str) -> str:
    """The memory text of an injected line, without its date label and quoting (baselines carry
    neither)."""
    quoted = re.sub(r"^- \[[^\]]*\] ", "", text)
    try:
        body, _ = json.JSONDecoder().raw_decode(quoted)
    except ValueError:
        return quoted
    return body if isinstance(body, str) else quoted


def _evidence(memory: Memory, dia: dict[str, list[str]]) -> list[str]:
    """The dia_ids a recalled memory covers: an episode's own ``source_id``, and a distilled memory's
    through the episodes it cites (its ``source_ids`` are memory ids; their excerpts are rendered with
    it). Memories collapsed into a hit as the same fact earn nothing: only what the prompt shows counts."""
    own = [memory.source_id] if memory.source_id else []
    return own + [d for s in memory.source_ids for d in dia.get(s, [])]


def _complete(hs: Hindsight, namespace: str, conv: Conversation) -> bool:
    count = hs.store.query("SELECT COUNT(*) FROM memories WHERE namespace = ?", (namespace,))[0][0]
    return bool(count == len(conv.turns))


def table(result: dict[str, Any], ks: Sequence[int]) -> str:
    head = ["system", *[f"R@{k} (1-4)" for k in ks], *[f"R@{k} (all)" for k in ks], "tokens@10",
            "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in result["systems"].items():
        row = [name, *[f"{s['cat1-4'][f'recall@{k}']:.3f}" for k in ks],
               *[f"{s['all'][f'recall@{k}']:.3f}" for k in ks], f"{s['cat1-4'].get('tokens@10', 0):.0f}",
               f"{s['latency_ms']['p50']:.1f}", f"{s['latency_ms']['p95']:.1f}"]
        lines.append("| " + " | ".join(row) + " |")
    cats = sorted({c for s in result["systems"].values() for c in s["per_category"]})
    lines += ["", "| system | " + " | ".join(f"cat {c} R@10" for c in cats) + " |",
              "|" + "---|" * (len(cats) + 1)]
    for name, s in result["systems"].items():
        cells = [f"{s['per_category'][c].get('recall@10', 0):.3f}" for c in cats]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(result: dict[str, Any], ks: Sequence[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, s in result["systems"].items():
        ax.plot(list(ks), [s["cat1-4"][f"recall@{k}"] for k in ks], marker="o", label=name)
    ax.set_xlabel("k (memories injected)")
    ax.set_ylabel("evidence recall@k, categories 1-4")
    ax.set_xticks(list(ks))
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("LoCoMo retrieval")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10, 20])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--workdir", type=Path, help="engine directory (default: a fresh temporary one); "
                        "reusing one skips re-embedding conversations already recorded")
    parser.add_argument("--conversations", type=int, help="only the first N conversations")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--sample", action="append", default=[], help="only these sample_ids (repeatable)")
    parser.add_argument("--cache", type=Path, help="directory of cached document vectors (see longmemeval.py)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a RecallConfig field for an ablation, e.g. --set fusion=rrf")
    parser.add_argument("--embedder", choices=["default", "minilm", "hash"], default="default",
                        help="minilm: all-MiniLM-L6-v2 (MODELS.md), the check with another embedder")
    args = parser.parse_args(argv)
    ks = sorted(set(args.k))
    overrides = {key: json.loads(value) if value[:1] in "0123456789-[{tf" else value
                 for key, value in (item.split("=", 1) for item in args.set)}
    conversations = load(args.data)[: args.conversations]
    if args.sample:
        conversations = [c for c in conversations if c.sample_id in args.sample]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(conversations, ks, args.workdir or Path(tmp) / "engine", progress=not args.quiet,
                     overrides=overrides, cache=args.cache, embedder_name=args.embedder)
    result["overrides"] = overrides
    result["embedder"] = args.embedder
    result["data"]["total_seconds"] = round(time.perf_counter() - started, 1)
    print(table(result, ks))
    print(json.dumps({name: s["parts"] for name, s in result["systems"].items()}, indent=1))
    print(json.dumps({"off_topic": result["off_topic"], "data": result["data"]}, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    if args.plot:
        plot(result, ks, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
