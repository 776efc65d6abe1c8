"""Everyday memory behaviours: what a user notices in the first hour with an agent that has memory.

Runs a suite in the format of ``bench/behaviour/`` (the scenarios format plus a ``kind`` per question,
``lang`` / ``tags`` per scenario and ``sweep_at``) against a fresh engine per scenario and judges each
question on the text the memory layer would inject (``RecallResult.to_prompt()``):

- ``answerable``: ``expect_any`` / ``expect_all`` appear (and ``forbid``, if given, does not);
- ``stale``: the new value (``expect_any``) appears and the old one (``forbid``) does not;
- ``filler``, ``offtopic``, ``tenant``: judged on ``forbid`` alone (whether the user's own facts come
  back is what the same scenarios' ``answerable`` questions measure).

It records the way the suite's reference runner (``bench/behaviour/behaviour_probe.py``) does, so both
give the same figures: one ``record`` per turn with the injected clock at the turn (turns one minute
apart), the sessions of every namespace and the ``sweep_at`` sweeps in time order, the engine opened
with ``background_consolidation=False`` and the worker's count trigger replayed in this thread
(consolidate a session after every ``lifecycle.consolidate_every`` of its episodes), ``consolidate``
before each sweep and after recording, then the questions through ``recall`` in file order (each recall
reinforces what it injects, as in use). Matching is case-sensitive. It prints a line per question (what
was injected, for a failure), then passed / total per kind, language and tag, and always exits 0: it
measures, it is not a gate.

    .venv/bin/python benchmarks/behaviour.py --data ../shared/bench/behaviour/behaviour_dev.json [--json OUT]
        [--only d-en- d-zh-]        # scenarios whose id contains one of these
        [--set floor_anchor_base=1.97]  # a RecallConfig field, for an opt-in mechanism or an ablation
        [--embedder hash]           # the model-free embedder: measures the engine's rules, not the model
        [--cache DIR]               # a disk cache of document vectors (the default model's, kept)
        [--unanswerable]            # also ask every scenario UNANSWERABLE: how often is something given?
        [--starting benchmarks/starting_template.jsonl]  # every user starts with these memories

With ``--starting`` every scenario's user begins with a template of starting memories (a new user's
defaults, ``Hindsight(starting_memories=...)``); after the questions it counts the starting memories
that recall (reported as a conflict's superseded side) or consolidation (superseded; everything is
consolidated after the questions, as a worker would sooner or later) put out of place, and by what.
The development set says nothing about a template's attributes (units, answer length, the user's
level), so every one of them is a wrong replacement.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import CachedEmbedder, Clock, iso_time, named_embedder
from hindsight_core import Hindsight, HindsightConfig, Status
from hindsight_core.embeddings.base import Embedder

KINDS = ("answerable", "stale", "filler", "offtopic", "tenant")
#: Kinds judged on ``forbid`` alone: what they should recall is measured by ``answerable`` questions.
FORBID_ONLY = frozenset({"filler", "offtopic", "tenant"})
DEFAULT_K = 5
#: Characters of the injected text a failure line shows.
SHOWN = 200
#: Questions about the asker that no scenario of the development set answers (``--unanswerable``): what
#: the memory layer gives them is what a question about the person gets when their memory holds no answer.
UNANSWERABLE = ("What's my blood type?", "我的血型是什么？", "What's my shoe size?", "我的生日是哪天？",
                "Who is my dentist?", "我最喜欢的颜色是什么？")


@dataclass
class Question:
    scenario: str
    index: int
    kind: str
    lang: str
    tags: list[str]
    text: str
    passed: bool
    problems: list[str]
    prompt: str
    hits: int

    @property
    def empty(self) -> bool:
        return self.prompt == ""


@dataclass
class ScenarioRun:
    id: str
    questions: list[Question] = field(default_factory=list)
    turns: int = 0
    replayed_consolidations: int = 0
    sweeps: int = 0
    archived: int = 0
    #: ``--unanswerable``: how many of ``UNANSWERABLE`` were asked, and how many were given some memory.
    unanswerable_asked: int = 0
    unanswerable_given: int = 0
    #: ``--starting``: the starting memories the user was given, and each one put out of place (its text
    #: and what replaced it: a successor after consolidation, or a recall's conflict).
    starting_given: int = 0
    starting_replaced: list[tuple[str, list[str]]] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(q.passed for q in self.questions)


@dataclass(order=True)
class Step:
    """One item of a scenario's timeline. Ordered by time; at the same instant a session comes before a
    sweep (a worker's pass sees what was recorded then), otherwise the file's order holds."""

    when: datetime
    is_sweep: bool
    seq: int
    namespace: str = field(default="", compare=False)
    session: dict[str, Any] = field(default_factory=dict, compare=False)


def timeline(scenario: dict[str, Any]) -> list[Step]:
    """Sessions of every namespace (other users' first in file order) and the sweeps, in time order: the
    order a deployment would have seen them in, which the recorded times alone do not give."""
    steps: list[Step] = []
    owned = [(o["namespace"], s) for o in scenario.get("other_namespaces") or [] for s in o["sessions"]]
    owned += [(scenario["namespace"], s) for s in scenario["sessions"]]
    for namespace, session in owned:
        steps.append(Step(iso_time(session["start"]), False, len(steps), namespace, session))
    for raw in scenario.get("sweep_at") or []:
        steps.append(Step(iso_time(raw), True, len(steps)))
    return sorted(steps)


def namespaces_of(scenario: dict[str, Any]) -> list[str]:
    return [o["namespace"] for o in scenario.get("other_namespaces") or []] + [scenario["namespace"]]


def judge(kind: str, query: dict[str, Any], prompt: str) -> list[str]:
    """What is wrong with the injected ``prompt`` for this question (nothing: it passes)."""
    forbidden = [s for s in query.get("forbid") or [] if s in prompt]
    if kind in FORBID_ONLY:
        if not forbidden:
            return []
        return [f"injected {forbidden}" if kind == "offtopic" else f"forbidden {forbidden}"]
    problems: list[str] = []
    expect_any = query.get("expect_any") or []
    if expect_any and not any(s in prompt for s in expect_any):
        problems.append(f"none of {expect_any}")
    missing = [s for s in query.get("expect_all") or [] if s not in prompt]
    if missing:
        problems.append(f"missing {missing}")
    if forbidden:
        problems.append(f"forbidden {forbidden}")
    return problems


def _replay(scenario: dict[str, Any], hs: Hindsight, clock: Clock, run: ScenarioRun, replay: bool) -> datetime:
    """Record the timeline; returns the latest time it reached (where the final consolidation runs)."""
    every = hs.config.lifecycle.consolidate_every if replay else 0
    since_trigger: dict[tuple[str, str], int] = {}
    last = clock.current
    for step in timeline(scenario):
        if step.is_sweep:
            clock.current = step.when
            if scenario.get("consolidate"):  # a deployment worker's pass consolidates, then sweeps
                for namespace in namespaces_of(scenario):
                    hs.consolidate(namespace)
            run.archived += hs.sweep(step.when).archived
            run.sweeps += 1
            last = max(last, step.when)
            continue
        session_id = step.session["session_id"]
        for i, (role, text) in enumerate(step.session["turns"]):
            clock.current = step.when + timedelta(minutes=i)
            hs.record(text, step.namespace, session_id=session_id, role=role, occurred_at=clock.current)
            run.turns += 1
            last = max(last, clock.current)
            key = (step.namespace, session_id)
            since_trigger[key] = since_trigger.get(key, 0) + 1
            if every and since_trigger[key] >= every:  # where the embedded worker would have run
                since_trigger[key] = 0
                hs.consolidate(step.namespace, session_id)
                run.replayed_consolidations += 1
    return last


def run_scenario(scenario: dict[str, Any], workdir: Path, embedder: Embedder | None = None,
                 config: HindsightConfig | None = None, *, replay: bool = True,
                 unanswerable: Sequence[str] = (), starting: Path | None = None) -> ScenarioRun:
    """Record one scenario into a fresh engine at ``workdir`` and ask its questions, then ``unanswerable``
    ones (not reinforcing, so they change nothing). A scenario that raises fails all its questions; the
    caller goes on with the next. ``starting``: a template every user starts with (see the module)."""
    run = ScenarioRun(id=str(scenario.get("id", "?")))
    started = time.perf_counter()
    steps = timeline(scenario)
    clock = Clock(steps[0].when if steps else iso_time(scenario["queries"][0]["at"]))
    hs = Hindsight(workdir, clock=clock, embedder=embedder, config=config, background_consolidation=False,
                   starting_memories=starting)
    try:
        last = _replay(scenario, hs, clock, run, replay)
        clock.current = last
        for procedure in scenario.get("procedures") or []:
            hs.add_procedure(procedure["trigger"], procedure["steps"], scenario["namespace"])
        if scenario.get("consolidate"):
            for namespace in namespaces_of(scenario):
                hs.consolidate(namespace)
        for index, query in enumerate(scenario["queries"]):
            kind = query.get("kind", "answerable")
            clock.current = iso_time(query["at"])
            result = hs.recall(query["text"], scenario["namespace"], session_id=query.get("session_id"),
                               k=int(query.get("k", DEFAULT_K)), now=clock.current)
            prompt = result.to_prompt()
            problems = judge(kind, query, prompt)
            run.starting_replaced += [(c.superseded.content, [c.successor.content]) for c in result.conflicts
                                      if c.superseded.starting]
            run.questions.append(Question(run.id, index, kind, scenario.get("lang", "?"),
                                          list(scenario.get("tags") or []), query["text"], not problems,
                                          problems, prompt, len(result.hits)))
        for text in unanswerable:
            run.unanswerable_asked += 1
            run.unanswerable_given += bool(hs.recall(text, scenario["namespace"], k=DEFAULT_K, track=False,
                                                     now=clock.current).hits)
        if starting is not None:  # then as a worker would, sooner or later: everything consolidated
            for namespace in namespaces_of(scenario):
                hs.consolidate(namespace)
            given = [m for m in hs.find(scenario["namespace"]) if m.starting]
            run.starting_given = len(given)
            run.starting_replaced += [
                (m.content, [s.memory.content for s in hs.history(m.id, namespace=scenario["namespace"]).superseded_by])
                for m in given if m.status != Status.ACTIVE]
            first: dict[str, list[str]] = {}  # each memory once, as first seen
            for old, by in run.starting_replaced:
                first.setdefault(old, by)
            run.starting_replaced = list(first.items())
    except Exception as exc:  # a scenario that crashes fails; the others still run
        run.error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
        run.questions = [Question(run.id, i, q.get("kind", "answerable"), scenario.get("lang", "?"),
                                  list(scenario.get("tags") or []), q["text"], False, [run.error], "", 0)
                         for i, q in enumerate(scenario["queries"])]
    finally:
        hs.close()
    run.seconds = round(time.perf_counter() - started, 1)
    return run


def tally(questions: Iterable[Question], groups: Callable[[Question], Iterable[str]]) -> dict[str, dict[str, Any]]:
    """``{group: {passed, total, rate}}``; a question counts in every group it belongs to (its tags)."""
    out: dict[str, dict[str, Any]] = {}
    for q in questions:
        for group in groups(q):
            row = out.setdefault(group, {"passed": 0, "total": 0})
            row["total"] += 1
            row["passed"] += q.passed
    for row in out.values():
        row["rate"] = round(row["passed"] / row["total"], 4)
    return dict(sorted(out.items()))


def per_kind(questions: Sequence[Question]) -> dict[str, dict[str, Any]]:
    """Per kind, in the README's order of kinds."""
    found = tally(questions, lambda q: [q.kind])
    return {k: found[k] for k in (*KINDS, *sorted(set(found) - set(KINDS))) if k in found}


def shown(prompt: str) -> str:
    """The injected text on one line without the engine's constant header, cut to ``SHOWN`` characters."""
    lines = prompt.split("\n")
    if lines and lines[0].startswith("Relevant memories"):
        lines = lines[1:]
    return " ⏎ ".join(lines)[:SHOWN]


def figures(runs: Sequence[ScenarioRun]) -> dict[str, Any]:
    questions = [q for r in runs for q in r.questions]
    passed = sum(q.passed for q in questions)
    offtopic = [q for q in questions if q.kind == "offtopic"]
    return {
        "per_kind": per_kind(questions),
        "overall": {"passed": passed, "total": len(questions),
                    "rate": round(passed / len(questions), 4) if questions else None},
        "scenarios": {"passed": sum(r.passed for r in runs), "total": len(runs)},
        "offtopic_empty": {"empty": sum(q.empty for q in offtopic), "total": len(offtopic)},
        "unanswerable_given": {"given": sum(r.unanswerable_given for r in runs),
                               "asked": sum(r.unanswerable_asked for r in runs)},
        "starting_replaced": {"given": sum(r.starting_given for r in runs),
                              "replaced": sum(len(r.starting_replaced) for r in runs),
                              "which": [[r.id, old, by] for r in runs for old, by in r.starting_replaced]},
        "per_lang": tally(questions, lambda q: [q.lang]),
        "per_tag": tally(questions, lambda q: q.tags),
    }


def print_question(q: Question) -> None:
    line = f"{'PASS' if q.passed else 'FAIL'} {q.scenario} [{q.kind}] {q.text!r}"
    if not q.passed:
        line += f": {'; '.join(q.problems)} | injected: {shown(q.prompt)!r}"
    print(line, flush=True)


def print_figures(result: dict[str, Any]) -> None:
    def table(title: str, rows: dict[str, dict[str, Any]]) -> None:
        print(f"\n| {title} | passed | total | rate |\n|---|---:|---:|---:|")
        for name, row in rows.items():
            print(f"| {name} | {row['passed']} | {row['total']} | {row['rate']:.1%} |")

    overall = result["overall"]
    table("kind", {**result["per_kind"], "all": overall} if overall["total"] else result["per_kind"])
    table("language", result["per_lang"])
    table("tag", result["per_tag"])
    off, scenarios = result["offtopic_empty"], result["scenarios"]
    rate = f" ({overall['rate']:.1%})" if overall["total"] else ""
    print(f"\nquestions passed {overall['passed']}/{overall['total']}{rate}; scenarios fully passed "
          f"{scenarios['passed']}/{scenarios['total']}; offtopic with nothing injected {off['empty']}/{off['total']}")
    unanswerable = result["unanswerable_given"]
    if unanswerable["asked"]:
        print(f"unanswerable questions about the asker given some memory "
              f"{unanswerable['given']}/{unanswerable['asked']}")
    starting = result["starting_replaced"]
    if starting["given"]:
        for scenario, old, by in starting["which"]:
            print(f"starting memory out of place in {scenario}: {old!r} <- {by!r}")
        print(f"starting memories out of place (superseded, or a recall's conflict) "
              f"{starting['replaced']} (of {starting['given']} given)")


def make_embedder(name: str, cache: Path | None) -> Embedder:
    """One instance for every scenario's engine (the vectors are the same, the model loads once), its
    document vectors cached per model (``named_embedder``)."""
    embedder = named_embedder(name)
    return CachedEmbedder(embedder, cache if name == "default" else cache / name) if cache is not None else embedder


def config_with(overrides: Sequence[str]) -> HindsightConfig:
    """The default configuration with ``KEY=VALUE`` RecallConfig overrides (a JSON value, else a string)."""
    config = HindsightConfig()
    for key, value in (item.split("=", 1) for item in overrides):
        setattr(config.recall, key, json.loads(value) if value[:1] in "0123456789-[{tfn" else value)
    return config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the figures and every question's result")
    parser.add_argument("--only", nargs="*", default=None, help="run the scenarios whose id contains one of these")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a RecallConfig field, e.g. --set floor_anchor_base=1.97")
    parser.add_argument("--embedder", choices=["default", "minilm", "hash"], default="default",
                        help="hash: the deterministic model-free embedder (not comparable with the reference)")
    parser.add_argument("--cache", type=Path, help="a directory caching document vectors across runs")
    parser.add_argument("--unanswerable", action="store_true",
                        help="also ask every scenario the questions of UNANSWERABLE and count those given memories")
    parser.add_argument("--starting", type=Path, metavar="JSONL",
                        help="a template of starting memories every user begins with (count those put out of place)")
    parser.add_argument("--no-replay", action="store_true",
                        help="do not replay the embedded worker's consolidation every N episodes of a session")
    args = parser.parse_args(argv)
    config = config_with(args.set)
    scenarios = json.loads(args.data.read_text(encoding="utf-8"))
    if args.only:
        scenarios = [s for s in scenarios if any(o in s["id"] for o in args.only)]
    embedder = make_embedder(args.embedder, args.cache)
    started = time.perf_counter()
    runs: list[ScenarioRun] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, scenario in enumerate(scenarios):
            run = run_scenario(scenario, Path(tmp) / f"s{n}", embedder, config, replay=not args.no_replay,
                               unanswerable=UNANSWERABLE if args.unanswerable else (), starting=args.starting)
            runs.append(run)
            for q in run.questions:
                print_question(q)
    result = figures(runs)
    print_figures(result)
    seconds = round(time.perf_counter() - started, 1)
    print(f"{seconds:.0f} s")
    if args.json:
        import hindsight_core

        out = {
            "suite": str(args.data),
            "engine": {"version": getattr(hindsight_core, "__version__", None)},
            "options": {"replay": not args.no_replay, "default_k": DEFAULT_K, "only": args.only, "set": args.set,
                        "embedder": args.embedder, "starting": None if args.starting is None else str(args.starting)},
            **result,
            "seconds": seconds,
            "per_scenario": {r.id: {"passed": r.passed, "questions_passed": sum(q.passed for q in r.questions),
                                    "questions": len(r.questions), "seconds": r.seconds, "turns": r.turns,
                                    "replayed_consolidations": r.replayed_consolidations, "sweeps": r.sweeps,
                                    "archived": r.archived, "error": r.error} for r in runs},
            "questions": [{**asdict(q), "empty": q.empty} for r in runs for q in r.questions],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
