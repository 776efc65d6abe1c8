"""A simulated year of use on a fixed clock: what is recalled stays hot, what is not fades to cold and
then to the archive, and nothing disappears without passing through the archive.

One user states 24 facts in the first weeks (consolidated into semantic memories) and chats small
episodes every few days. Each week the user asks about the same 6 facts (``hs.recall``, which
reinforces what it injects); the other 18 facts are never asked about. ``sweep()`` runs weekly. At the
end the archive is restored and every memory id ever created is accounted for. Writes its section of
docs/benchmark-log.md.

    .venv/bin/python benchmarks/lifecycle_sim.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import Clock
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
FREQUENT = 12  # a fact injected at least this often in the year counts as "frequently recalled"


def _snapshot(hs: Hindsight, facts: dict[str, str], hot_ids: set[str], created: set[str], day: int) -> dict[str, Any]:
    rows = hs.store.select("namespace = ?", (NS,))
    by_id = {m.id: m for m in rows}
    path = hs.archive_path(NS)
    in_archive = {m.id for m, _, _ in archive.read(path).records} if path.exists() else set()
    now = hs.now().timestamp()
    rate = hs.config.activation.rate(Layer.SEMANTIC)

    def group(ids: set[str]) -> dict[str, Any]:
        status = Counter(by_id[i].status.value if i in by_id else "archived" for i in ids)
        logs = [by_id[i].activation.log_at(now, rate) for i in ids if i in by_id]
        return {"status": dict(status), "mean_ln_a": round(sum(logs) / len(logs), 2) if logs else None}

    unused = set(facts.values()) - hot_ids
    return {
        "day": day,
        "n_hot": len(hot_ids),
        "n_unused": len(unused),
        "hot": group(hot_ids),
        "unused": group(unused),
        "by_layer": dict(Counter(f"{m.layer.value}/{m.status.value}" for m in rows)),
        "in_archive": len(in_archive),
        "lost": len(created - set(by_id) - in_archive),
    }


def run(days: int = 365, extra_days: int = 90) -> dict[str, Any]:
    clock = Clock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    config = HindsightConfig(lifecycle=LifecycleConfig(consolidate_every=0))
    figures: Counter[str] = Counter()
    snapshots: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        hs = Hindsight(Path(tmp) / "data", clock=clock, embedder=E5Embedder(), config=config)
        created: set[str] = set()
        for i, (statement, _) in enumerate(FACTS):
            created.add(hs.record(statement, NS, session_id=f"intro{i // 6}").id)
            clock.current += timedelta(hours=12)
        report = hs.consolidate(NS)
        created |= set(report.created_ids)
        facts = {m.content: m.id for m in hs.store.select("namespace = ? AND layer = ?", (NS, Layer.SEMANTIC.value))}
        recalled: Counter[str] = Counter()
        for day in range(1, days + extra_days + 1):
            clock.current += timedelta(days=1)
            if day % 3 == 0:  # a little chatter: episodes nobody asks about again
                created.add(
                    hs.record(f"Day {day}: talked about the weather and the news.", NS, session_id=f"d{day}").id
                )
            if day % 7 == 0:
                if day <= days:  # after the year the user stops asking: then even recalled facts fade
                    for _, question in FACTS[:HOT]:
                        result = hs.recall(question, NS, session_id=f"d{day}", k=3)
                        figures["recalls"] += 1
                        figures["recall_hits"] += int(bool(result.hits))
                        recalled.update(h.memory.id for h in result.hits)
                    hs.flush_recall_log()
                sweep = hs.sweep()
                figures["cooled"] += sweep.cooled + sweep.expired
                figures["archived"] += sweep.archived
            if day in (days, days + extra_days):
                frequent = {mid for mid in facts.values() if recalled[mid] >= FREQUENT}
                snapshots.append(_snapshot(hs, facts, frequent, created, day))
        path = hs.archive_path(NS)
        restored = hs.restore(path).restored if path.exists() else 0
        after = dict(Counter(m.status.value for m in hs.store.select("namespace = ?", (NS,))))
        hs.close()
    return {
        "created": len(created),
        "figures": dict(figures),
        "snapshots": snapshots,
        "restored": restored,
        "after_restore": after,
        "days": days,
        "extra_days": extra_days,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--extra-days", type=int, default=90, help="days after the user stops asking")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    r = run(args.days, args.extra_days)
    f = r["figures"]
    rows = []
    for snap in r["snapshots"]:
        layers = ", ".join(f"{k} {v}" for k, v in sorted(snap["by_layer"].items()))
        rows.append(
            f"| {snap['day']} | {snap['n_hot']}: {snap['hot']['status']} (ln A {snap['hot']['mean_ln_a']}) "
            f"| {snap['n_unused']}: {snap['unused']['status']} (ln A {snap['unused']['mean_ln_a']}) | {layers} "
            f"| {snap['in_archive']} | **{snap['lost']}** |"
        )
    table = "\n".join(rows)
    header = (
        f"| day | facts recalled ≥ {FREQUENT} times | other facts | store by layer/status | in the archive | lost |"
    )
    body = f"""## Lifecycle simulation (a year on a fixed clock)

`benchmarks/lifecycle_sim.py`: {len(FACTS)} facts stated in the first two weeks and consolidated (rule
extractor); a short episode of chatter every 3 days; each week of the first {r["days"]} days the user
asks about the same {HOT} facts (`hs.recall`, which reinforces what it injects), then stops asking for
{r["extra_days"]} days; `sweep()` runs weekly. Default settings: cold below `ln A = -3` after 30 idle
days, archived after 90 idle days; half-lives episodic 7 d, semantic 90 d.

{header}
|---|---|---|---|---|---|
{table}

- memories ever created: {r["created"]}; moved to cold by the sweeps: {f.get("cooled", 0)}; archived:
  {f.get("archived", 0)}; recalls that injected something: {f.get("recall_hits", 0)} / {f.get("recalls", 0)}.
- restore of the archive file at the end: {r["restored"]} memories back (store after: {r["after_restore"]}).
- "lost" counts ids created but found neither in the store nor in the archive: nothing disappears
  without passing through the archive.

Reading: a fact counts as frequently recalled when recall injected it at least {FREQUENT} times in the
year (some questions bring back a neighbouring fact instead of the one asked about). Recalled facts are
reinforced on every recall and stay hot; unused episodes
fade with their 7-day half-life, go cold after a month idle and are archived after 90 idle days (the
20 cold episodes in the table are that steady state: chatter between 30 and 90 days old).
Unused semantic facts decay on a 90-day half-life: after a year they are just above the cold
threshold, and they go cold (and, idle that long, straight to the archive) a few weeks later.
"""
    print(body)
    if not args.no_doc:
        write_section("lifecycle-sim", body)


if __name__ == "__main__":
    main()
