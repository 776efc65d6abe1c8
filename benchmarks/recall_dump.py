"""Whether two code trees recall the same: every hit, score, reason, channel score, injected text,
token count, conflict, analysis and trace of ~130 recalls on one synthetic history, compared as JSON.

A change meant to make recall cheaper without changing a ranking decision runs this against the code
before it. The history is deterministic: ``scale.py``'s synthetic conversations and hash embedder, a
clock moved by hand, memory ids made from that clock and a counter (ULIDs are otherwise random in
their low bits, and ties between equal scores are broken by id), and a fixed string hash seed (sums
over a set of terms follow the set's order, which moves a score's last bit). It covers two namespace
sizes, writes between recalls (the snapshot grown in place), consolidated facts (hits with sources),
edits and deletions, tracked recalls (reinforcement changes later scores), and a subtree recall.

    .venv/bin/python benchmarks/recall_dump.py --trees /path/to/before /path/to/after
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

EXTRA = ["what did I say last week?", "我上周说了什么？", "Do I have any allergies?", "tell me about Lily",
         "what is my favourite food"]


def _deterministic_ids() -> None:
    import ulid

    import hindsight_core.lifecycle.api as lifecycle_api
    import hindsight_core.lifecycle.integrate as integrate
    import hindsight_core.memories as memories

    count = [0]

    class FromClock:
        @staticmethod
        def from_datetime(when: datetime) -> ulid.ULID:
            count[0] += 1
            return ulid.ULID.from_int((int(when.timestamp() * 1000) << 80) | count[0])

    for module in (memories, integrate, lifecycle_api):
        module.ULID = FromClock  # type: ignore[attr-defined]


def dump(out: Path) -> None:
    """Worker: run the history on the tree on ``PYTHONPATH`` and write what every recall returned."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    _deterministic_ids()
    from scale import Conversations, load

    import hindsight_core
    from hindsight_core import Hindsight, RecallResult
    from hindsight_core.embeddings.hashed import HashedWordEmbedder

    print(f"engine from {Path(hindsight_core.__file__).parent.parent}", file=sys.stderr)
    now = [datetime(2026, 3, 1, 12, 0, tzinfo=UTC)]

    def tick(seconds: float = 37) -> None:
        now[0] += timedelta(seconds=seconds)

    def seen(result: RecallResult) -> dict[str, Any]:
        data = result.model_dump(mode="json")
        return {
            "hits": [(h["memory"]["id"], h["memory"]["content"], h["score"], h["reason"], h["channels"], h["text"],
                      [s["id"] for s in h["sources"]]) for h in data["hits"]],
            "tokens": data["tokens"], "prompt": result.to_prompt(), "degraded": data["degraded"],
            "conflicts": [(c["superseded"]["id"], c["successor"]["id"]) for c in data["conflicts"]],
            "analysis": data["analysis"], "trace": data["trace"],
        }

    results: list[Any] = []
    root = Path(tempfile.mkdtemp(prefix="recall-dump-"))
    hs = Hindsight(root / "data", embedder=HashedWordEmbedder(), clock=lambda: now[0], background_consolidation=False)
    for size, ns in ((100, "user:a"), (1000, "user:b")):
        conv = Conversations(seed=size)
        load(hs, conv, ns, size)
        queries = [conv.query() for _ in range(40)] + EXTRA
        tick()
        hs.consolidate(ns)
        first = hs.store.select("namespace = ?", [ns], order="seq")[:6]
        for m in first[:3]:
            tick()
            hs.update(m.id, m.content + " (updated: now it is different)", namespace=ns)
        for m in first[3:5]:
            tick()
            hs.forget(m.id, namespace=ns)
        chat = conv.events(60, offset=size, prefix="chat")
        for i, query in enumerate(queries):
            tick()
            results.append(seen(hs.recall(query, ns, explain=True, track=i % 2 == 0)))
            if i % 3 == 0:
                user, reply = chat[2 * (i // 3)], chat[2 * (i // 3) + 1]
                hs.record(str(user["content"]), ns, session_id="chat", role="user")
                tick(5)
                results.append(seen(hs.recall(str(user["content"]), ns, session_id="chat", explain=i % 2 == 1)))
                tick(5)
                hs.record(str(reply["content"]), ns, session_id="chat", role="assistant")
        hs.flush_recall_log()
        results.append(hs.stats(ns).model_dump(mode="json"))
    conv = Conversations(seed=7)
    for t in range(5):
        hs.record_many(conv.events(30, prefix=f"t{t}s"), namespace=f"org:x/u{t}")
    for query in [conv.query() for _ in range(10)]:
        tick()
        results.append(seen(hs.recall(query, "org:x", subtree=True, explain=True)))
    hs.close()
    out.write_text(json.dumps(results, indent=0, sort_keys=True, default=str))


def compare(trees: list[str]) -> int:
    outputs = []
    for tree in trees:
        out = Path(tempfile.mkdtemp(prefix="recall-dump-out-")) / "dump.json"
        env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0")
        subprocess.run([sys.executable, __file__, "--out", str(out)], cwd=tree, env=env, check=True)
        outputs.append(json.loads(out.read_text()))
    recalls = sum(1 for r in outputs[0] if isinstance(r, dict) and "hits" in r)
    hits = sum(len(r["hits"]) for r in outputs[0] if isinstance(r, dict) and "hits" in r)
    differing = [i for i, (a, b) in enumerate(zip(outputs[0], outputs[1], strict=True)) if a != b]
    print(f"{recalls} recalls, {hits} hits: {'identical' if not differing else f'{len(differing)} differ'}"
          + (f" (first at {differing[0]})" if differing else ""))
    return 1 if differing else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", nargs=2, help="the two code trees to compare")
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.out:
        dump(Path(args.out))
    else:
        sys.exit(compare([str(Path(t).resolve()) for t in args.trees]))


if __name__ == "__main__":
    main()
