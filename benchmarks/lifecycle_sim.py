"""A simulated year of use on a fixed clock: what is recalled stays hot, what is not fades to cold and
then to the archive, and nothing disappears without passing through the archive.

One user states 24 facts in the first weeks (consolidated into semantic memories) and chats small
episodes every few days. Each week the user asks about the same 6 facts (``hs.recall``, which
reinforces what it injects); the other 18 facts are never asked about. ``sweep()`` runs weekly. At the
end the archive is restored and every memory id ever created is accounted for. Writes its section of
docs/benchmarks.md.

    .venv/bin/python benchmarks/lifecycle_sim.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._report import write_section
from hindsight_core import Hindsight, HindsightConfig, Layer
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.lifecycle import archive
from hindsight_core.lifecycle.config import LifecycleConfig

NS = "user:sim"
FACTS = [
    ("I'm allergic to peanuts.", "What am I allergic to?"),
    ("My name is Priya.", "What is my name?"),
    ("I live in Lisbon.", "Where do I live?"),
    ("I work as a data engineer.", "What is my job?"),
    ("I prefer window seats.", "Which seat do I like on planes?"),
    ("I love Thai food.", "What food do I love?"),
    ("I hate loud music.", "what music annoys me"),
    ("I use PostgreSQL for the ledger.", "which database"),
    ("My favorite color is teal.", "favorite color"),
    ("I'm from Porto.", "where am I from"),
    ("I enjoy trail running.", "sport"),
    ("I like jazz.", "music taste"),
    ("I prefer tea over coffee.", "drink"),
    ("I love sci-fi novels.", "books"),
    ("I dislike crowded beaches.", "beach"),
    ("I enjoy board games.", "games"),
    ("I like cycling to work.", "commute"),
    ("I prefer morning meetings.", "meetings"),
    ("I love the mountains.", "holiday"),
    ("I like dark chocolate.", "sweets"),
    ("I enjoy pottery classes.", "hobby"),
    ("I prefer trains to planes.", "travel"),
    ("I like minimalist design.", "design"),
    ("I enjoy gardening.", "weekend"),
]
HOT = 6  # the first HOT facts are asked about every week


class Clock:
    def __init__(self, start: datetime) -> None:
        self.current = start

    def __call__(self) -> datetime:
        return self.current


def run(days: int = 365) -> dict[str, object]:
    clock = Clock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    config = HindsightConfig(lifecycle=LifecycleConfig(consolidate_every=0))
    figures: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        hs = Hindsight(Path(tmp) / "data", clock=clock, embedder=E5Embedder(), config=config)
        created: set[str] = set()
        for i, (statement, _) in enumerate(FACTS):
            created.add(hs.record(statement, NS, session_id=f"intro{i // 6}").id)
            clock.current += timedelta(hours=12)
        report = hs.consolidate(NS)
        created |= set(report.created_ids)
        facts = {
            m.content: m.id
            for m in hs.store.select("namespace = ? AND layer = ?", (NS, Layer.SEMANTIC.value))
        }
        hot_ids = {
            mid
            for content, mid in facts.items()
            if any(q.split()[-1].rstrip(".") in content for q, _ in FACTS[:HOT])
        }
        archived_seen: set[str] = set()
        for day in range(1, days + 1):
            clock.current += timedelta(days=1)
            if day % 3 == 0:  # a little chatter: episodes nobody asks about again
                created.add(
                    hs.record(
                        f"Day {day}: talked about the weather and the news.", NS, session_id=f"d{day}"
                    ).id
                )
            if day % 7 == 0:
                for _, question in FACTS[:HOT]:
                    result = hs.recall(question, NS, session_id=f"d{day}", k=3)
                    figures["recalls"] += 1
                    figures["recall_hits"] += int(bool(result.hits))
                hs.flush_recall_log()
                sweep = hs.sweep()
                figures["cooled"] += sweep.cooled + sweep.expired
                figures["archived"] += sweep.archived
                archived_seen |= set(sweep.archived_ids)
        rows = hs.store.select("namespace = ?", (NS,))
        status = {m.id: m.status.value for m in rows}
        by_layer: Counter[str] = Counter(f"{m.layer.value}/{m.status.value}" for m in rows)
        path = hs.archive_path(NS)
        in_archive = {m.id for m, _, _ in archive.read(path)} if path.exists() else set()
        lost = created - set(status) - in_archive
        hot_status = Counter(status.get(mid, "archived") for mid in hot_ids)
        cold_facts = Counter(
            status.get(mid, "archived") for content, mid in facts.items() if mid not in hot_ids
        )
        restored = hs.restore(path) if path.exists() else 0
        after = Counter(m.status.value for m in hs.store.select("namespace = ?", (NS,)))
        hs.close()
    return {
        "days": days,
        "created": len(created),
        "figures": dict(figures),
        "by_layer": dict(by_layer),
        "hot_facts": dict(hot_status),
        "unused_facts": dict(cold_facts),
        "archived_total": len(archived_seen),
        "in_archive_file": len(in_archive),
        "lost": len(lost),
        "restored": restored,
        "after_restore": dict(after),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    r = run(args.days)
    f = r["figures"]
    assert isinstance(f, dict)
    layers = ", ".join(f"{k} {v}" for k, v in sorted(r["by_layer"].items()))  # type: ignore[attr-defined]
    body = f"""## Lifecycle simulation (a year on a fixed clock)

`benchmarks/lifecycle_sim.py`: {len(FACTS)} facts stated in the first two weeks and consolidated; a
short episode of chatter every 3 days; each week the user asks about the same {HOT} facts
(`hs.recall`, which reinforces what it injects) and `sweep()` runs. Default settings: cold below
`ln A = -3` after 30 idle days, archive after 90 idle days; half-lives episodic 7 d, semantic 90 d.

| after {r["days"]} days | value |
|---|---|
| memories ever created | {r["created"]} |
| weekly-recalled facts ({HOT}) | {r["hot_facts"]} |
| never-recalled facts ({len(FACTS) - HOT}) | {r["unused_facts"]} |
| store by layer/status | {layers} |
| moved to cold by the sweeps | {f.get("cooled", 0)} |
| archived (JSONL, then deleted) | {r["archived_total"]} (records in the file: {r["in_archive_file"]}) |
| **lost** (neither in the store nor in the archive) | **{r["lost"]}** |
| restored from the archive | {r["restored"]} (store after restore: {r["after_restore"]}) |
| recalls that injected something | {f.get("recall_hits", 0)} / {f.get("recalls", 0)} |

Reading: recalled facts are reinforced on every weekly recall and stay active; unused episodes fade
(7-day half-life) and are cold after about a month and archived after 90 idle days; unused semantic
facts (90-day half-life) take longer than a year to reach the cold threshold at importance 3, so they
stay in the store; they are the slow tail, by design. Every id created is in the store or the archive.
"""
    print(body)
    if not args.no_doc:
        write_section("lifecycle-sim", body)


if __name__ == "__main__":
    main()
