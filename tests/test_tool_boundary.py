"""The CLI and the inspector read through the engine's public methods and its inspection views
(``hs.inspection``), never through its store, indexes or private members: what an operator's tool may
show is then decided by the engine, where namespaces are enforced."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("hindsight_core/cli", "hindsight_core/ui")
#: the engine's parts (``Hindsight.store`` and the like) a tool must not reach into
INTERNALS = {"store", "vectors", "activation", "outbox"}


def _reaches_inside(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.Attribute):
            continue
        private = node.attr.startswith("_") and not node.attr.startswith("__")
        value = node.value
        on_engine = (isinstance(value, ast.Name) and value.id in {"hs", "engine"}) or (
            isinstance(value, ast.Attribute) and value.attr == "engine"
        )
        if on_engine and (node.attr in INTERNALS or private):
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def _files() -> list[Path]:
    return sorted(p for folder in TOOLS for p in (ROOT / folder).rglob("*.py"))


def test_the_tools_exist() -> None:
    assert len(_files()) >= 6


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_tools_read_through_the_public_engine(path: Path) -> None:
    assert _reaches_inside(path) == []


def test_the_check_sees_a_reach_inside(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(hs, engine):\n    hs.store.get('x')\n    engine._holds_namespace('n')\n"
        "    request.app.state.engine.vectors\n    hs.inspection.memories('n', [])\n    engine.__class__\n"
        "    memory.activation.log_base\n",
        encoding="utf-8",
    )
    assert sorted(_reaches_inside(sample)) == ["line 2: .store", "line 3: ._holds_namespace", "line 4: .vectors"]
