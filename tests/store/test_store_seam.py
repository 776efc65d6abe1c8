"""SQL stays in ``store/``: the rest of the project calls named store operations and never hands the
store a WHERE clause, so a query the engine depends on is written, indexed and tested in one place."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hindsight_core", "hindsight_langchain", "hindsight_llamaindex")


def _select_calls(path: Path) -> list[int]:
    """Lines calling ``<anything>.select(...)``: the store's raw WHERE-clause read."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "select"
    ]


def _outside_the_store() -> list[Path]:
    store = ROOT / "hindsight_core" / "store"
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if store not in p.parents)


def test_no_module_outside_the_store_passes_where_text() -> None:
    files = _outside_the_store()
    assert len(files) > 50
    found = {str(p.relative_to(ROOT)): lines for p in files if (lines := _select_calls(p))}
    assert found == {}


def test_the_check_sees_a_where_clause(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('def f(hs):\n    return hs.store.select("namespace = ?", ["user:a"])\n', encoding="utf-8")
    assert _select_calls(sample) == [2]
