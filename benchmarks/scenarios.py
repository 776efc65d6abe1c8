"""Memory scenarios: small bilingual conversations that each pin down one behaviour of agent memory.

Runs every scenario of a file in the format of ``bench/scenarios/`` against a fresh engine, checks the
text the memory layer would inject (``RecallResult.to_prompt()``) and reports pass/fail per scenario.

    .venv/bin/python benchmarks/scenarios.py --data ../shared/bench/scenarios/scenarios_dev.json [--json OUT]
        [--set floor_anchor_base=1.97]  # a RecallConfig field, for an opt-in mechanism or an ablation
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import Clock, iso_time
from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.embeddings.base import Embedder


@dataclass
class QueryOutcome:
    text: str
    passed: bool
    problems: list[str]
    prompt: str


@dataclass
class Outcome:
    id: str
    passed: bool
    needs: list[str]
    queries: list[QueryOutcome] = field(default_factory=list)
    error: str | None = None


def _record_sessions(hs: Hindsight, clock: Clock, namespace: str, sessions: Sequence[dict[str, Any]]) -> None:
    for session in sessions:
        start = iso_time(session["start"])
        for i, (role, text) in enumerate(session["turns"]):
            clock.current = start + timedelta(minutes=i)
            hs.record(text, namespace, session_id=session["session_id"], role=role, occurred_at=clock.current)


def check(prompt: str, query: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    expect_any = query.get("expect_any") or []
    if expect_any and not any(s in prompt for s in expect_any):
        problems.append(f"none of {expect_any} injected")
    missing = [s for s in query.get("expect_all") or [] if s not in prompt]
    if missing:
        problems.append(f"missing {missing}")
    forbidden = [s for s in query.get("forbid") or [] if s in prompt]
    if forbidden:
        problems.append(f"forbidden {forbidden} injected")
    return problems


def run_scenario(scenario: dict[str, Any], workdir: Path, embedder: Embedder,
                 config: HindsightConfig | None = None) -> Outcome:
    needs = [name for name, flag in (("consolidate", scenario.get("consolidate")),
                                     ("procedures", scenario.get("procedures"))) if flag]
    outcome = Outcome(id=str(scenario.get("id", "?")), passed=False, needs=needs)
    first = min((iso_time(s["start"]) for s in scenario.get("sessions", [])), default=None)
    clock = Clock(first or iso_time(scenario["queries"][0]["at"]))
    hs = Hindsight(workdir, clock=clock, embedder=embedder, config=config)
    try:
        namespace = scenario["namespace"]
        for other in scenario.get("other_namespaces") or []:
            _record_sessions(hs, clock, other["namespace"], other.get("sessions", []))
        _record_sessions(hs, clock, namespace, scenario.get("sessions", []))
        for procedure in scenario.get("procedures") or []:
            hs.add_procedure(procedure["trigger"], procedure["steps"], namespace)  # type: ignore[attr-defined]
        if scenario.get("consolidate"):
            hs.consolidate(namespace)  # type: ignore[attr-defined]
        for query in scenario["queries"]:
            clock.current = iso_time(query["at"])
            result = hs.recall(query["text"], namespace, session_id=query.get("session_id"),
                               k=int(query.get("k", 5)), now=clock.current)
            prompt = result.to_prompt()
            problems = check(prompt, query)
            outcome.queries.append(QueryOutcome(query["text"], not problems, problems, prompt))
        outcome.passed = all(q.passed for q in outcome.queries)
    except Exception as exc:  # a scenario that crashes fails; the others still run
        outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.queries.append(QueryOutcome("", False, [traceback.format_exc(limit=3)], ""))
    finally:
        hs.close()
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--verbose", action="store_true", help="print the injected text of failures")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a RecallConfig field, e.g. --set floor_anchor_base=1.97")
    args = parser.parse_args(argv)
    config = HindsightConfig()
    for key, value in (item.split("=", 1) for item in args.set):
        setattr(config.recall, key, json.loads(value) if value[:1] in "0123456789-[{tfn" else value)
    scenarios = json.loads(args.data.read_text())
    from hindsight_core.embeddings.e5 import E5Embedder

    embedder = E5Embedder()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, scenario in enumerate(scenarios):
            outcomes.append(run_scenario(scenario, Path(tmp) / f"s{n}", embedder, config))
    print("| scenario | needs | result | detail |\n|---|---|---|---|")
    for o in outcomes:
        detail = o.error or "; ".join(p for q in o.queries for p in q.problems)
        print(f"| {o.id} | {', '.join(o.needs) or '-'} | {'PASS' if o.passed else 'FAIL'} | {detail[:160]} |")
        if args.verbose and not o.passed:
            for q in o.queries:
                print(f"    query {q.text!r} injected:\n      " + (q.prompt.replace("\n", "\n      ") or "(nothing)"))
    plain = [o for o in outcomes if not o.needs]
    print(f"\npassed {sum(o.passed for o in outcomes)}/{len(outcomes)}; "
          f"without consolidation or procedures {sum(o.passed for o in plain)}/{len(plain)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], ensure_ascii=False, indent=1))
    return 0 if all(o.passed for o in plain) else 1


if __name__ == "__main__":
    raise SystemExit(main())
