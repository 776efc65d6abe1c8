"""``python -m hindsight_core.demo``: record a two-session conversation, then show what was stored and
what comes back when it matters. Runs on the embedded default; no server, no network."""

from __future__ import annotations

import argparse
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hindsight_core.engine import Hindsight

SESSIONS: list[tuple[str, datetime, list[tuple[str, str]]]] = [
    ("s1", datetime(2026, 3, 1, 10, 0, tzinfo=UTC), [
        ("user", "Hi, I'm Wang Lei. I'm allergic to peanuts, quite badly."),
        ("assistant", "Thanks Wang Lei, I'll keep your peanut allergy in mind."),
        ("user", "我住在杭州，预算上限是3万元。"),
        ("assistant", "好的，记住了：住在杭州，预算上限3万元。"),
        ("user", "Which is better for the city, a BYD or a Tesla?"),
        ("assistant", "Both are fine; BYD is cheaper, Tesla has better software."),
        ("user", "ok"),
        ("user", "谢谢"),
    ]),
    ("s2", datetime(2026, 3, 9, 19, 0, tzinfo=UTC), [
        ("user", "跟你说一下，预算调整了，上限改成5万元。"),
        ("assistant", "收到，预算上限更新为5万元。"),
        ("user", "I'm inviting a few friends for dinner this weekend."),
    ]),
]
QUESTIONS = ["Can you recommend a restaurant?", "我们的预算上限是多少？", "上次我们聊了什么车？"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, help="data directory (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    path = args.path or Path(tempfile.mkdtemp(prefix="hindsight-demo-"))
    clock_now = [SESSIONS[0][1]]
    with Hindsight(path, clock=lambda: clock_now[0]) as hs:
        print(f"Data directory: {path}\n")
        for session_id, start, turns in SESSIONS:
            for i, (role, text) in enumerate(turns):
                clock_now[0] = start + timedelta(minutes=i)
                hs.record(text, namespace="user:wanglei", session_id=session_id, role=role)
        report = hs.consolidate("user:wanglei")
        print(f"Consolidation: {report.model_dump_json(exclude_none=True)}\n")
        print("Stored memories (layer / kind / status / indexed); facts cite the episodes they came from:")
        for m in sorted(hs.find("user:wanglei"), key=lambda m: m.layer.value):
            flag = "indexed" if m.indexed else "kept, not indexed (small talk)"
            print(f"  {m.layer.value:<10} {m.kind.value:<10} {m.status.value:<10} {flag:<31} {m.content}")
        print("\nWorking memory of session s2 (recent turns, verbatim):")
        for m in hs.working("user:wanglei", "s2"):
            print(f"  [{m.role}] {m.content}")
        print("\nStats:", hs.stats().model_dump_json(indent=2, exclude_defaults=True))
        clock_now[0] += timedelta(minutes=5)
        for question in QUESTIONS:
            result = hs.recall(question, namespace="user:wanglei", session_id="s3", k=3)
            print(f"\nQ: {question}\n{result.to_prompt() or '(nothing relevant)'}")


if __name__ == "__main__":
    main()
