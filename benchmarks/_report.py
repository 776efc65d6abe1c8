"""Shared by the benchmark scripts: timing helpers, and writing one benchmark's section of
docs/benchmark-log.md between its own markers, leaving the rest."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmark-log.md"


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")


#: User turns shared by the adapter overhead benchmarks (English and Chinese, facts and requests).
USER_TURNS = [
    "I'm allergic to peanuts, quite badly.", "My budget for the Lisbon trip is 3000 euros.",
    "我住在杭州，预算上限是3万元。", "Can you book a table for four on Friday?",
    "What did I tell you about my allergies?", "周末想请几个朋友吃饭，帮我推荐个餐厅吧。",
]


def median_ms(samples: list[float]) -> str:
    ms = statistics.median(samples) * 1000
    return f"{ms:.1f}" if ms >= 1 else f"{ms:.3f}"


def timed(fn: Callable[[int], object], n: int) -> list[float]:
    """Seconds of each of ``n`` calls ``fn(0)`` … ``fn(n - 1)``."""
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - start)
    return out
