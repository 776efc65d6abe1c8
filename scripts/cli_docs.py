"""Regenerate docs/cli.md from the CLI's --help output: ``python scripts/cli_docs.py``."""

from __future__ import annotations

from pathlib import Path

from hindsight_core.cli.docs import render

if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")
