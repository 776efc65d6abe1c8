"""docs/cli.md is the CLI's current --help; the console script is declared; typer and rich stay lazy."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_docs_cli_md_is_the_current_help_output() -> None:
    from hindsight_core.cli.docs import render

    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == render(), "docs/cli.md is stale: run python scripts/cli_docs.py"
    assert "## `hindsight sweep --help`" in current and "--dry-run" in current


def test_console_script_and_dependencies_are_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"] == {"hindsight": "hindsight_core.cli:main"}
    assert {"typer>=0.12", "rich>=13"} <= set(project["dependencies"])


def test_importing_the_engine_or_the_cli_package_loads_neither_typer_nor_rich() -> None:
    code = (
        "import json, sys; import hindsight_core; import hindsight_core.cli; "
        "print(json.dumps([m for m in ('typer', 'rich', 'click') if m in sys.modules]))"
    )
    env_path = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": env_path, "PATH": ""}).stdout
    assert json.loads(out) == []


def test_module_entry_point_runs_help_in_a_real_process() -> None:
    proc = subprocess.run([sys.executable, "-m", "hindsight_core.cli", "--help"], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""}, timeout=60)
    assert proc.returncode == 0 and "Usage:" in proc.stdout and "recall" in proc.stdout
    ui = subprocess.run([sys.executable, "-m", "hindsight_core.cli", "ui", "--help"], capture_output=True,
                        text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""}, timeout=60)
    assert ui.returncode == 0 and "--writable" in ui.stdout
