"""Writes one benchmark's section of docs/benchmarks.md between its own markers, leaving the rest."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


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
