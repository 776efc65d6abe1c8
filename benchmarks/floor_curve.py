"""The relevance floor's operating-point curve on the development data, and ``hindsight tune``'s fit of it.

Issue 37 asks for the floor's operating point to be chosen from a measured curve — answerable questions
left without their answer against questions nothing should be given memories for — on the behaviour set,
LoCoMo and LongMemEval together, favouring the answerable side; and a bar low enough to answer
everything lets in what must not be shown (the old value beside the new one, small talk, another user's
facts), which the curve counts too. This runs the same fit ``hindsight tune`` runs on a user's labelled
questions (``hindsight_core.recall.tuning.fit``), on:

- the behaviour set (``bench/behaviour``): each scenario recorded as ``benchmarks/behaviour.py`` records
  it, its ``answerable`` and ``stale`` questions judged as that benchmark judges them (``expect_any`` /
  ``expect_all`` in the injected text, and none of ``forbid``: for a stale question, the old value), its
  ``filler`` and ``tenant`` questions guarded (passing when nothing they ``forbid`` is injected), its
  ``offtopic`` questions and the six unanswerable questions about the asker (``ASKER_UNANSWERED``)
  passing only when nothing is injected;
- LoCoMo (``bench/locomo``): every ``--every``-th question of categories 1-4, passing when an injected hit
  (or a memory folded into one) is one of its evidence turns, and the ten off-topic queries per
  conversation passing when nothing is injected;
- LongMemEval (``bench/longmemeval``): every ``--lme-every``-th question, its haystack's user turns
  recorded as ``benchmarks/longmemeval.py`` records them, passing when an injected hit is one of its
  ``has_answer`` turns (a question that marks none: a turn of its answer sessions); and one of the
  off-topic queries per question (in turn), passing when nothing is injected.

Every setting is recalled read-only at k=5 over the namespace's tree, as the adapters recall. It prints
the curve per data set and together, and the held-out before/after of the fit; ``--json`` writes them.

    .venv/bin/python benchmarks/floor_curve.py --behaviour ../shared/bench/behaviour/behaviour_dev.json \\
        --locomo ../shared/bench/locomo/locomo_dev.json \\
        --longmemeval ../shared/bench/longmemeval/longmemeval_dev.json --cache /tmp/fc-cache \\
        [--embedder minilm] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._measure import CachedEmbedder, Clock, iso_time, named_embedder
from benchmarks.behaviour import DEFAULT_K, ScenarioRun, _replay, judge, namespaces_of
from benchmarks.behaviour import UNANSWERABLE as ASKER_UNANSWERED
from benchmarks.locomo import OFF_TOPIC, load
from benchmarks.longmemeval import load as load_lme
from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.embeddings.base import Embedder
from hindsight_core.recall.tuning import (
    ANSWERABLE,
    GUARDED,
    UNANSWERABLE,
    Example,
    TuneReport,
    fit,
    outcomes,
    settings_around,
    tally,
)

#: The behaviour set's kinds as tune's: a stale question is answerable (the new value) with the old one
#: forbidden; filler and tenant questions are judged on what they forbid alone.
BEHAVIOUR_KINDS = {"answerable": ANSWERABLE, "stale": ANSWERABLE, "offtopic": UNANSWERABLE, "filler": GUARDED,
                   "tenant": GUARDED}


def behaviour_columns(path: Path, embedder: Embedder, workdir: Path, grid: list[dict[str, float]]
                      ) -> tuple[list[str], list[list[bool]]]:
    """Each question's kind (tune's), and ``[setting][question]`` over the behaviour set's questions and
    the unanswerable ones, one fresh engine per scenario (their namespaces repeat across scenarios)."""
    kinds: list[str] = []
    rows: list[list[bool]] = [[] for _ in grid]
    base = HindsightConfig().recall
    for n, scenario in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        first = scenario["sessions"][0]["start"] if scenario.get("sessions") else scenario["queries"][0]["at"]
        clock = Clock(iso_time(first))
        hs = Hindsight(workdir / f"b{n}", clock=clock, embedder=embedder, background_consolidation=False)
        try:
            clock.current = _replay(scenario, hs, clock, ScenarioRun(id=str(scenario.get("id"))), True)
            if scenario.get("consolidate"):
                for namespace in namespaces_of(scenario):
                    hs.consolidate(namespace)
            asked: list[tuple[str, str | None, Any, dict[str, Any] | None]] = [
                (q["text"], q.get("session_id"), iso_time(q["at"]), q) for q in scenario["queries"]
            ]
            asked += [(text, None, clock.current, None) for text in ASKER_UNANSWERED]
            kinds += [UNANSWERABLE if q is None else BEHAVIOUR_KINDS[q.get("kind", "answerable")]
                      for *_, q in asked]
            for s, setting in enumerate(grid):
                cfg = base.model_copy(update=setting)
                for text, session, when, query in asked:
                    result = hs.recall(text, scenario["namespace"], session_id=session, k=DEFAULT_K, now=when,
                                       subtree=True, track=False, config=cfg)
                    kind = "offtopic" if query is None else query.get("kind", "answerable")
                    if kind == "offtopic":  # stricter than the behaviour benchmark: nothing at all injected
                        rows[s].append(not result.hits)
                    else:
                        rows[s].append(not judge(kind, query or {}, result.to_prompt()))
        finally:
            hs.close()
    return kinds, rows


def locomo_columns(path: Path, embedder: Embedder, workdir: Path, grid: list[dict[str, float]],
                   every: int) -> tuple[list[str], list[list[bool]]]:
    clock = Clock()
    hs = Hindsight(workdir / "locomo", clock=clock, embedder=embedder, background_consolidation=False)
    kinds: list[str] = []
    rows: list[list[bool]] = [[] for _ in grid]
    try:
        for conv in load(path):
            namespace = f"locomo:{re.sub(r'[^A-Za-z0-9_.:-]', '_', conv.sample_id)}"
            clock.current = conv.now
            hs.record_many([{"content": t.text, "session_id": t.session, "occurred_at": t.when,
                             "source_id": t.dia_id, "role": t.text.split(":", 1)[0]} for t in conv.turns], namespace)
            asked = [Example(q.text, namespace, frozenset(q.evidence), at=conv.now)
                     for q in conv.questions if 1 <= q.category <= 4][::every]
            asked += [Example(text, namespace, frozenset(), at=conv.now) for text in OFF_TOPIC]
            _add(kinds, rows, asked, outcomes(hs, asked, grid, k=DEFAULT_K))
    finally:
        hs.close()
    return kinds, rows


def lme_columns(path: Path, embedder: Embedder, workdir: Path, grid: list[dict[str, float]],
                every: int) -> tuple[list[str], list[list[bool]]]:
    """One namespace per question (forgotten after it), as ``benchmarks/longmemeval.py`` records them."""
    clock = Clock()
    hs = Hindsight(workdir / "lme", clock=clock, embedder=embedder, background_consolidation=False)
    kinds: list[str] = []
    rows: list[list[bool]] = [[] for _ in grid]
    try:
        for n, q in enumerate(load_lme(path)[::every]):
            namespace = f"lme:{q.qid}"
            clock.current = q.now
            hs.record_many([{"content": t.text, "session_id": t.session, "occurred_at": t.when,
                             "source_id": t.source_id, "role": "user"} for t in q.turns], namespace)
            # the has_answer turns, or (a question that marks none) every user turn of its answer sessions
            answers = q.evidence_turns or {t.source_id for t in q.turns if t.session in q.evidence_sessions}
            asked = [Example(q.text, namespace, frozenset(answers), at=q.now)] if answers else []
            asked.append(Example(OFF_TOPIC[n % len(OFF_TOPIC)], namespace, frozenset(), at=q.now))
            _add(kinds, rows, asked, outcomes(hs, asked, grid, k=DEFAULT_K))
            hs.forget_namespace(namespace)
    finally:
        hs.close()
    return kinds, rows


def _add(kinds: list[str], rows: list[list[bool]], asked: Sequence[Example], passes: Sequence[Sequence[bool]]
         ) -> None:
    """Append ``asked``'s kinds and each setting's passes (``tuning.outcomes``) to the columns."""
    kinds += [ex.kind for ex in asked]
    for row, more in zip(rows, passes, strict=True):
        row += more


def curve_of(kinds: Sequence[str], rows: Sequence[Sequence[bool]], grid: Sequence[dict[str, float]]
             ) -> list[dict[str, Any]]:
    out = []
    for s, setting in enumerate(grid):
        m = tally(kinds, rows[s])
        out.append({"floor_anchor_base": setting["floor_anchor_base"], "answered": m.answered,
                    "answerable": m.answerable, "quiet": m.quiet, "unanswerable": m.unanswerable,
                    "clean": m.clean, "guarded": m.guarded})
    return sorted(out, key=lambda r: r["floor_anchor_base"])


def make_embedder(name: str, cache: Path | None) -> Embedder:
    embedder = named_embedder(name)
    return CachedEmbedder(embedder, cache / name) if cache is not None else embedder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--behaviour", type=Path)
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--every", type=int, default=4, help="LoCoMo: every n-th question of categories 1-4")
    parser.add_argument("--longmemeval", type=Path)
    parser.add_argument("--lme-every", type=int, default=1, help="LongMemEval: every n-th question")
    parser.add_argument("--embedder", choices=("default", "minilm"), default="default")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    embedder = make_embedder(args.embedder, args.cache)
    grid = settings_around(HindsightConfig().recall)
    started = time.perf_counter()
    sets: dict[str, tuple[list[str], list[list[bool]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.behaviour:
            sets["behaviour"] = behaviour_columns(args.behaviour, embedder, Path(tmp), grid)
        if args.locomo:
            sets["locomo"] = locomo_columns(args.locomo, embedder, Path(tmp), grid, args.every)
        if args.longmemeval:
            sets["longmemeval"] = lme_columns(args.longmemeval, embedder, Path(tmp), grid, args.lme_every)
    kinds = [k for ks, _ in sets.values() for k in ks]
    rows = [[ok for _, rs in sets.values() for ok in rs[s]] for s in range(len(grid))]
    report: TuneReport = fit(kinds, grid, rows, folds=5)
    curves = {name: curve_of(ks, rs, grid) for name, (ks, rs) in [*sets.items(), ("together", (kinds, rows))]}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    result = {
        "measured": {"date": datetime.now(UTC).date().isoformat(), "commit": commit},
        "embedder": args.embedder, "settings": len(grid), "seconds": round(time.perf_counter() - started),
        "current": report.current, "fitted": report.fitted,
        "held_out": {"today": vars(report.before), "tuned": vars(report.after),
                     "today_score": round(report.before.score, 3), "tuned_score": round(report.after.score, 3)},
        "curves": curves,
    }
    for name, curve in curves.items():
        print(f"\n{name}: floor_anchor_base  answered  quiet  clean")
        for r in curve:
            at = {"floor_anchor_base": r["floor_anchor_base"]}
            mark = " <- today" if at == report.current else ""
            mark += " <- fitted" if at == report.fitted else ""
            print(f"  {r['floor_anchor_base']:6.2f}  {r['answered']}/{r['answerable']}  "
                  f"{r['quiet']}/{r['unanswerable']}  {r['clean']}/{r['guarded']}{mark}")
    print(f"\nheld-out folds: today {report.before} score {report.before.score:.3f}; "
          f"tuned {report.after} score {report.after.score:.3f}; fitted {report.fitted}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
