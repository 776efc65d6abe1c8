"""docs/configuration.md is generated from the code; a new option, a changed default or a new
environment variable that was not written into it fails here, with the command that fixes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "config_reference.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


def test_configuration_reference_is_up_to_date() -> None:
    result = _run("--check")
    assert result.returncode == 0, result.stderr + "\nrun: python scripts/config_reference.py"


def test_reference_lists_every_option_with_its_default() -> None:
    from hindsight_core.config import HindsightConfig

    rows = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8").replace("\\|", "|").splitlines()
    for section, values in HindsightConfig().model_dump(mode="json").items():
        for option, value in values.items():
            row = next((line for line in rows if line.startswith(f"| `{section}.{option}` |")), "")
            assert f"`{json.dumps(value, ensure_ascii=False)}`" in row, f"{section}.{option}: {row!r}"
    assert any(line.startswith("| `HINDSIGHT_PATH` |") for line in rows)
    assert any(line.startswith("| `reconcile_on_open` | `True` |") for line in rows)


def test_check_fails_on_a_stale_reference(tmp_path: Path) -> None:
    """The check compares against the file on disk: an edited copy of the script's output is refused."""
    code = (
        "import runpy, sys; from pathlib import Path; sys.path.insert(0, {root!r}); "
        "module = runpy.run_path({script!r}); out = Path({out!r}); "
        "module['main'].__globals__['OUTPUT'] = out; "
        "out.write_text(module['render']().replace('`0.97`', '`0.95`'), encoding='utf-8'); "
        "sys.exit(module['main'](['--check']))"
    ).format(root=str(ROOT), script=str(SCRIPT), out=str(tmp_path / "configuration.md"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1
    assert "out of date" in result.stderr
