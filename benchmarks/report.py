"""Render docs/benchmarks.md, today's figures, from the JSON the benchmark scripts write with ``--json``.

One table per benchmark, the command that made it and the machine it ran on; a benchmark whose JSON is
missing from the results directory shows "not measured in this run". The history of experiments is
docs/benchmark-log.md; this page is only ever written by this script (tests/docs checks it is).

    .venv/bin/python benchmarks/report.py                 # render from benchmarks/results/
    .venv/bin/python benchmarks/report.py --run           # run every benchmark into it first (an hour or so)
    .venv/bin/python benchmarks/report.py --check         # fail if the page is not what the results render
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
DATA = "../shared/bench"
CACHE = "/tmp/hindsight-bench"

#: Keys holding one row per question (or per query): the page needs only the summaries.
BULKY = ("questions", "per_question", "margins")


def commands(results: str = "benchmarks/results", data: str = DATA, cache: str = CACHE) -> dict[str, list[str]]:
    """The command that writes each ``<name>.json`` (run from the repository root)."""
    return {
        "behaviour": ["benchmarks/behaviour.py", "--data", f"{data}/behaviour/behaviour_dev.json", "--unanswerable",
                      "--cache", f"{cache}/behaviour-vec", "--json", f"{results}/behaviour.json"],
        "locomo": ["benchmarks/locomo.py", "--data", f"{data}/locomo/locomo_dev.json", "--k", "5", "10", "--quiet",
                   "--cache", f"{cache}/locomo-vec", "--json", f"{results}/locomo.json"],
        "longmemeval": ["benchmarks/longmemeval.py", "--data", f"{data}/longmemeval/longmemeval_dev.json",
                        "--quiet", "--cache", f"{cache}/lme-vec", "--json", f"{results}/longmemeval.json"],
        "scenarios": ["benchmarks/scenarios.py", "--data", f"{data}/scenarios/scenarios_dev.json",
                      "--json", f"{results}/scenarios.json"],
        "import_memory": ["benchmarks/import_memory.py", "--json", f"{results}/import_memory.json"],
        "reinforce_batch": ["benchmarks/reinforce_batch.py", "--memories", "1000", "--turns", "300",
                            "--json", f"{results}/reinforce_batch.json"],
        "floor_curve": ["benchmarks/floor_curve.py", "--behaviour", f"{data}/behaviour/behaviour_dev.json",
                        "--locomo", f"{data}/locomo/locomo_dev.json",
                        "--longmemeval", f"{data}/longmemeval/longmemeval_dev.json", "--cache", f"{cache}/floor-vec",
                        "--json", f"{results}/floor_curve.json"],
        "floor_curve_minilm": ["benchmarks/floor_curve.py", "--behaviour", f"{data}/behaviour/behaviour_dev.json",
                               "--locomo", f"{data}/locomo/locomo_dev.json",
                               "--longmemeval", f"{data}/longmemeval/longmemeval_dev.json", "--lme-every", "3",
                               "--embedder", "minilm",
                               "--cache", f"{cache}/floor-vec", "--json", f"{results}/floor_curve_minilm.json"],
        "scale": ["benchmarks/scale.py", "--sizes", "1000,10000,100000,1000000", "--namespaces", "1000x100",
                  "--real", "1000,100000", "--floor-from-engine", "--workdir", f"{cache}/scale",
                  "--json", f"{results}/scale.json"],
        "sharing": ["benchmarks/sharing.py", "--data", f"{data}/locomo/locomo_dev.json", "--cache",
                    f"{cache}/locomo-vec", "--json", f"{results}/sharing.json"],
    }


def compact(value: Any) -> Any:
    """``value`` without its per-question arrays (a count under one of those names stays)."""
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items() if k not in BULKY or isinstance(v, int | float)}
    return value


def machine() -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")),
               platform.processor() or platform.machine())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return {"cpu": cpu, "cores": os.cpu_count(), "os": platform.platform(terse=True),
            "python": platform.python_version(), "date": datetime.now(UTC).date().isoformat(),
            "commit": commit.stdout.strip() or None}


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def run_all(results: Path, data: str, cache: str) -> None:
    """Run every benchmark in sequence into ``results``, then keep only each file's summaries."""
    results.mkdir(parents=True, exist_ok=True)
    (results / "machine.json").write_text(json.dumps(machine(), indent=1) + "\n", encoding="utf-8")
    for name, argv in commands(str(results), data, cache).items():
        print(f"== {name}: {' '.join(argv)}", file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, *argv], cwd=ROOT, check=False)
        out = results / f"{name}.json"
        if proc.returncode != 0:
            print(f"   {name} exited {proc.returncode}", file=sys.stderr)
        if out.exists():
            out.write_text(json.dumps(compact(json.loads(out.read_text(encoding="utf-8"))), ensure_ascii=False,
                                      indent=1) + "\n", encoding="utf-8")


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|",
            *("| " + " | ".join(str(c) for c in row) + " |" for row in rows)]


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def behaviour(r: dict[str, Any]) -> list[str]:
    rows = [[kind, k["passed"], k["total"], f"{k['rate']:.1%}"] for kind, k in r["per_kind"].items()]
    o = r["overall"]
    rows.append(["**all**", o["passed"], o["total"], f"{o['rate']:.1%}"])
    s, u = r["scenarios"], r.get("unanswerable_given")
    out = _table(["question kind", "passed", "total", "rate"], rows)
    out += ["", f"Scenarios fully passed: {s['passed']} of {s['total']}."]
    if u:
        out[-1] += (f" Questions about the asker that nothing in their memory answers, given some memory anyway: "
                    f"{u['given']} of {u['asked']}.")
    return out


def locomo(r: dict[str, Any]) -> list[str]:
    rows = []
    for name, s in r["systems"].items():
        cats = s["per_category"]
        parts = s.get("parts", {})
        rows.append([name, _f(s["cat1-4"].get("recall@5")), _f(s["cat1-4"].get("recall@10")),
                     *(_f(cats.get(c, {}).get("recall@10")) for c in "1234"),
                     _f(parts.get("tune", {}).get("recall@10")), _f(parts.get("held", {}).get("recall@10"))])
    out = _table(["system", "R@5", "R@10", "cat 1 R@10", "cat 2 R@10", "cat 3 R@10", "cat 4 R@10",
                  "tune R@10", "held R@10"], rows)
    d, off = r["data"], r["off_topic"]
    given = sum(off.get("queries_given_memories_by_part", {}).values())
    out += ["", f"Evidence recall@k over categories 1–4 (cat 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop); "
            f"{d['conversations']} conversations, {d['turns']:,} turns, {d['questions']:,} questions. "
            f"Off-topic queries given memories: {given} of {off['queries'] * d['conversations']}."]
    return out


def longmemeval(r: dict[str, Any]) -> list[str]:
    rows = [[name, *(_f(s[p].get("session_all@10")) for p in ("all", "tune", "held")),
             *(_f(s[p].get("turn@5")) for p in ("all", "tune", "held"))] for name, s in r["systems"].items()]
    out = _table(["system", "session_all@10", "tune", "held", "turn@5", "tune", "held"], rows)
    d, off, empty = r["data"], r["off_topic"], r["answerable_left_empty"]
    out += ["", f"{d['questions']} questions, {d['turns']:,} turns. Answerable questions recall left empty: "
            f"{empty['all']}. Off-topic queries given memories: {off['given_memories']} of {off['asked']}."]
    return out


def scenarios(r: list[dict[str, Any]]) -> list[str]:
    plain = [o for o in r if not o["needs"]]
    rows = [["all", sum(o["passed"] for o in r), len(r)],
            ["without consolidation or procedures", sum(o["passed"] for o in plain), len(plain)]]
    return _table(["scenarios", "passed", "total"], rows)


def import_memory(r: dict[str, Any]) -> list[str]:
    rows = [[f"{int(n):,}", f"{f['file_mb']:.1f}", f"{f['python_peak_mb']:.1f}", f"{f['max_rss_mb']:.0f}"]
            for n, f in r["lines"].items()]
    return _table(["lines", "file MB", "Python peak MB", "peak RSS MB"], rows)


def reinforce_batch(r: dict[str, Any]) -> list[str]:
    rows = [[name, f"{f['turn_ms_p50']:.1f}", f"{f['cpu_ms_mean']:.1f}", f"{f['redis_commands_per_turn']:.2f}"]
            for name, f in r["systems"].items()]
    return [f"{r['memories']:,} memories, {r['turns']} chat turns, each a recall and a record.", "",
            *_table(["reinforcement written", "turn p50 ms", "CPU ms per turn", "Redis commands per turn"], rows)]


def floor_curve(r: dict[str, Any]) -> list[str]:
    cur, fit = r["current"], r["fitted"]
    curves = r["curves"]
    sets = list(curves)
    rows = []
    for i, point in enumerate(curves[sets[0]]):
        bar = point["floor_anchor_base"]
        mark = " (today)" if bar == cur["floor_anchor_base"] else ""
        cells = []
        for name in sets:
            p = curves[name][i]
            clean = f" · {p['clean']}/{p['guarded']}" if p.get("guarded") else ""
            cells.append(f"{p['answered']}/{p['answerable']} · {p['quiet']}/{p['unanswerable']}{clean}")
        rows.append([f"{bar:g}{mark}", *cells])
    guarded = {name for name in sets if curves[name][0].get("guarded")}
    out = _table(["floor_anchor_base", *(f"{name}: answered · quiet" + (" · clean" if name in guarded else "")
                                         for name in sets)], rows)
    h = r["held_out"]
    today, tuned = h["today"], h["tuned"]
    clean = (f", {today['clean']}/{today['guarded']} clean" if today.get("guarded") else "",
             f", {tuned['clean']}/{tuned['guarded']} clean" if tuned.get("guarded") else "")
    answer = {"behaviour": "behaviour: its expected text", "locomo": "LoCoMo: an evidence turn",
              "longmemeval": "LongMemEval: a has_answer turn"}
    out += ["", "*answered*: answerable questions with an answer among "
            f"the injected hits ({'; '.join(answer[name] for name in sets if name in answer)}); "
            "*quiet*: questions "
            "nothing should be injected for (off-topic ones, and the behaviour set's questions about the asker "
            "that their memory does not answer) given nothing"
            + ("; *clean*: the behaviour set's filler and tenant questions given nothing they forbid (small talk, "
               "another user's facts; a stale question's old value fails it as *answered*)" if guarded else "")
            + ". The same fit `hindsight tune` runs, on 5 folds: "
            f"today's setting {today['answered']}/{today['answerable']} answered, {today['quiet']}/"
            f"{today['unanswerable']} quiet{clean[0]} on held-out folds (mean of the rates {h['today_score']:.3f}); "
            f"refitted ({', '.join(f'{k} {v:g}' for k, v in fit.items())}) {tuned['answered']}/"
            f"{tuned['answerable']}, {tuned['quiet']}/{tuned['unanswerable']}{clean[1]} ({h['tuned_score']:.3f}), "
            + ("better: `hindsight tune --out` would write it." if h["tuned_score"] > h["today_score"] else
               "no better: `hindsight tune` would write nothing.")]
    return out


def sharing(r: dict[str, Any]) -> list[str]:
    rows = [[n, f["questions"], f"{f['with_shared']:.3f}", f"{f['without']:.3f}"]
            for n, f in r["checkpoints"].items()]
    return [f"{r['conversations']} conversations; the questions measured are the {r['questions_measured_share']:.0%} "
            "of categories 1-4 whose evidence the first agent's rule extractor distilled.", "",
            *_table(["turns the second agent has heard (at most)", "questions",
                     f"recall@{r['k']} with the shared layer", "without"], rows)]


def scale(r: dict[str, Any]) -> list[str]:
    sizes = r["sizes"]
    smallest = min(sizes, key=int)
    rows = [[f"{int(n):,}", f"{f['recall_p50_ms']:.1f}", f"{f['floor_p50_ms']:.2f}",
             f"{f['recall_p50_ms'] / f['floor_p50_ms']:.1f}x", f"{f['after_write_p50_ms'] / f['recall_p50_ms']:.2f}x",
             f"{f['chat_turn_p50_ms'] / sizes[smallest]['chat_turn_p50_ms']:.2f}x",
             f"{f['cold_start_new_process_s']:.2f}", f"{f['rss_growth_mb']:,}"] for n, f in sizes.items()]
    out = _table(["memories", "recall p50 ms", "floor p50 ms", "recall / floor", "after a write / cached",
                  f"chat turn / at {int(smallest):,}", "first recall, new process (s)", "RSS growth MB"], rows)
    notes = ["The floor is one query of the namespace's own Chroma collection, the engine's index of the same "
             "vectors; a hashed-word embedder, so only the engine's own cost counts"]
    notes += [f"{n.replace('x', ' namespaces x ')} memories: one namespace's recall {t['recall_p50_ms']:.1f} ms, "
              f"{t['recall_p50_ms'] / t['floor_p50_ms']:.1f}x its vectors alone in Chroma, "
              f"RSS +{t['rss_growth_mb']} MB" for n, t in r.get("tenants", {}).items()]
    real = r.get("real_chat_turn_p50_ms", {})
    if real:
        notes.append("A chat turn with the default model (record, recall, record): "
                     + ", ".join(f"{v:.0f} ms at {int(n):,}" for n, v in real.items()))
    return [*out, "", ". ".join(notes) + "."]


#: name → (title, what it measures, renderer)
BENCHMARKS: dict[str, tuple[str, str, Callable[[Any], list[str]]]] = {
    "behaviour": ("Everyday behaviours", "whether what memory injects into a prompt is right in small bilingual "
                  "conversations: answers present, stale values and filler absent, off-topic and other tenants "
                  "given nothing.", behaviour),
    "locomo": ("LoCoMo", "evidence recall@k of long two-person conversations (the dev split), against BM25, the "
               "same vectors alone and the last k turns.", locomo),
    "longmemeval": ("LongMemEval_S", "whether the sessions and turns holding an answer are among the first k "
                    "recalled from a 50-session haystack, against the same e5 vectors alone, BM25 and their "
                    "RRF.", longmemeval),
    "scenarios": ("Memory scenarios", "pass/fail of small conversations that each pin down one behaviour of "
                  "agent memory.", scenarios),
    "import_memory": ("`hindsight import` memory", "the peak memory of importing a JSONL file, by its size "
                      "(hashed-word embedder, no model).", import_memory),
    "reinforce_batch": ("Reinforcement on Redis", "what reinforcing the injected memories costs a chat turn "
                        "on the Redis activation index, written after every recall and batched (hashed-word "
                        "embedder, a private `redis-server`).", reinforce_batch),
    "floor_curve": ("The relevance floor's operating points", "what each bar of the floor answers and keeps "
                    "quiet on the behaviour set, LoCoMo (1 in 4 questions) and LongMemEval at k=5, and what "
                    "`hindsight tune` would move it to.", floor_curve),
    "floor_curve_minilm": ("The floor's operating points with all-MiniLM-L6-v2", "the same, with another "
                           "embedder passed as `embedder=`: where the floor fitted to the default one stands "
                           "there, and what `hindsight tune` makes of it.", floor_curve),
    "scale": ("Recall as memory grows", "recall in one namespace of 1k to 1M memories against one query of the "
              "same vectors in Chroma, right after a write, in a chat loop and in a new process, and one "
              "namespace among a thousand.", scale),
    "sharing": ("A shared layer for a second agent", "LoCoMo evidence recall@10 of a new agent over its first "
                "turns of a conversation another agent already learned, with a grant to that agent's semantic "
                "layer and without.", sharing),
}


def render(results: Path = RESULTS) -> str:
    path = results / "machine.json"
    m = json.loads(path.read_text(encoding="utf-8")) if path.exists() else machine()
    shown = os.path.relpath(results, ROOT) if results.is_absolute() else str(results)
    cmds = commands(shown)
    lines = ["# Benchmarks", "",
             "Today's figures, one table per benchmark, rendered by `benchmarks/report.py` from the JSON in "
             "`benchmarks/results/`; do not edit by hand. How each figure came about, and every experiment "
             "before it, is in the [benchmark log](benchmark-log.md).", "",
             f"Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('os', '?')}, "
             f"Python {m.get('python', '?')}"
             + (f"; measured {m['date']}" if m.get("date") else "")
             + (f" on `{m['commit']}`" if m.get("commit") else "") + ".", "",
             "| benchmark | measures |", "|---|---|",
             *(f"| [{title}](#{name.replace('_', '-')}) | {what} |" for name, (title, what, _) in BENCHMARKS.items()),
             ""]
    for name, (title, _, draw) in BENCHMARKS.items():
        lines += [f'<a id="{name.replace("_", "-")}"></a>', "", f"## {title}", "",
                  "```bash", ".venv/bin/python " + " ".join(cmds[name]), "```", ""]
        file = results / f"{name}.json"
        data = json.loads(file.read_text(encoding="utf-8")) if file.exists() else None
        lines += draw(data) if data is not None else ["Not measured in this run."]
        if isinstance(data, dict) and data.get("measured"):  # a figure measured apart from the others
            lines += ["", f"Measured {data['measured']['date']} on `{data['measured']['commit']}`."]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS, help="the directory of the benchmarks' JSON")
    parser.add_argument("--out", type=Path, default=PAGE)
    parser.add_argument("--run", action="store_true", help="run every benchmark into --results first")
    parser.add_argument("--data", default=DATA, help="the directory of the bench data sets (for --run)")
    parser.add_argument("--cache", default=CACHE, help="where the scripts cache document vectors (for --run)")
    parser.add_argument("--check", action="store_true", help="fail if --out is not what the results render")
    args = parser.parse_args(argv)
    if args.run:
        run_all(args.results, args.data, args.cache)
    page = render(args.results)
    if args.check:
        if not args.out.exists() or args.out.read_text(encoding="utf-8") != page:
            print(f"{args.out} is stale: run benchmarks/report.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(page, encoding="utf-8")
    print(f"wrote {args.out} ({page.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
