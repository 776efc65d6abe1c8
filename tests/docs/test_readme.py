"""The Python snippets of README.md and of the docs run as written: every ```python block of a
file is executed in order, in one fresh interpreter, in an empty temporary directory (so the default
data directory ``./.hindsight`` is fresh too). A block fenced ```python no-run is shown, not run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/langchain.md", "docs/llamaindex.md", "docs/configuration.md"]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)

RUNNER = """
import json, sys
blocks = json.load(open(sys.argv[1], encoding="utf-8"))
scope = {"__name__": "__main__"}
for line, code in blocks:
    exec(compile(code, f"{sys.argv[2]}, block at line {line}", "exec"), scope)
print("all blocks ran")
"""


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the fence, code) of every runnable block, in order."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)]


def test_fences_are_recognised() -> None:
    text = "x\n```python\nprint(1)\n```\n```python no-run\nboom()\n```\n```bash\nls\n```\n"
    assert python_blocks(text) == [(2, "print(1)\n")]


@pytest.mark.parametrize("doc", DOCS)
def test_snippets_run_as_written(doc: str, tmp_path: Path) -> None:
    blocks = python_blocks((ROOT / doc).read_text(encoding="utf-8"))
    assert blocks, f"{doc} has no python blocks"
    _run(blocks, doc, tmp_path)


README_BLOCKS = python_blocks((ROOT / "README.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("index", range(len(README_BLOCKS)))
def test_each_readme_block_runs_alone_and_again(index: int, tmp_path: Path) -> None:
    """A reader pastes one block into a fresh interpreter, then runs it again (a notebook cell re-run, a
    script started twice in the same directory): it must need no name from an earlier block and leave
    nothing behind that the second run trips over (an engine left open, a data directory it expects
    empty)."""
    line, code = README_BLOCKS[index]
    _run([(line, code), (line, code)], f"README.md block {index + 1}", tmp_path)


def _run(blocks: list[tuple[int, str]], doc: str, tmp_path: Path) -> None:
    (tmp_path / "blocks.json").write_text(json.dumps(blocks), encoding="utf-8")
    (tmp_path / "run.py").write_text(RUNNER, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    # the snippets build engines from the defaults: no deployment variable of the caller's may leak in
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("HINDSIGHT_") or key.startswith("HINDSIGHT_TEST_")}
    env.update(ANONYMIZED_TELEMETRY="False", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(tmp_path / "blocks.json"), doc],
                            cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{doc}:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    assert result.stdout.rstrip().endswith("all blocks ran")
