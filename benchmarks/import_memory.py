"""What ``hindsight import`` of a JSONL events file costs in memory, by file size: the peak of Python
allocations (tracemalloc) and the process's peak RSS. A file held whole grows both with every line;
a streamed import keeps the Python peak flat (the RSS still grows with what the vector index keeps
loaded: embedded Chroma holds every vector of a collection in memory).

Each size runs in a fresh process, on the deterministic hashed-word embedder (no model), so the figures
are the import's own:

    .venv/bin/python benchmarks/import_memory.py --lines 5000 50000 [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

TEXTS = [
    "I'm allergic to peanuts, quite badly, so please never suggest satay or pad thai when I ask for dinner.",
    "We moved the launch review to Thursday afternoon because the design team is away until Wednesday.",
    "My daughter starts piano lessons next month; the teacher lives two streets away from her school.",
    "The staging database migration failed on step 4 again, the lock timeout looks too short for it.",
]

#: Run in the child: import the file through the CLI, print the peaks as JSON.
CHILD = """
import json, resource, sys, tracemalloc
from hindsight_core.cli.app import app
from hindsight_core.embeddings.hashed import HashedWordEmbedder
embedder = HashedWordEmbedder()
tracemalloc.start()
try:
    app(["--path", sys.argv[1], "--no-progress", "import", sys.argv[2], "-n", "bench:import", "--json"],
        obj={"embedder": embedder}, standalone_mode=False)
finally:
    peak = tracemalloc.get_traced_memory()[1]
    print(json.dumps({"python_peak_mb": peak / 2**20,
                      "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), file=sys.stderr)
"""


def write_events(path: Path, lines: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(lines):
            event = {"content": f"{TEXTS[i % len(TEXTS)]} (note {i})", "session_id": f"s{i // 50}",
                     "role": "user" if i % 2 == 0 else "assistant", "metadata": {"app": "chat", "turn": i}}
            out.write(json.dumps(event) + "\n")


def measure(lines: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "events.jsonl"
        write_events(source, lines)
        proc = subprocess.run([sys.executable, "-c", CHILD, str(Path(tmp) / "data"), str(source)],
                              capture_output=True, text=True, check=True)
        figures: dict[str, float] = json.loads(proc.stderr.strip().splitlines()[-1])
        figures["file_mb"] = source.stat().st_size / 2**20
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures, by line count")
    args = parser.parse_args()
    print("| lines | file MB | Python peak MB | peak RSS MB |\n|---:|---:|---:|---:|")
    out: dict[str, dict[str, float]] = {}
    for lines in args.lines:
        f = out[str(lines)] = measure(lines)
        print(f"| {lines:,} | {f['file_mb']:.1f} | {f['python_peak_mb']:.1f} | {f['max_rss_mb']:.0f} |", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"lines": out}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
