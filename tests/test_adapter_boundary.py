"""The adapters reach the engine only through its public package and ``hindsight_core.integration``,
so the engine's modules can be reorganised without breaking an adapter."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = ("hindsight_langchain", "hindsight_llamaindex")
ALLOWED = {"hindsight_core", "hindsight_core.integration"}


def _core_imports(path: Path) -> list[tuple[int, str]]:
    """Every ``hindsight_core`` module a file imports, wherever the import sits (top level, inside a
    function, under ``TYPE_CHECKING``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "hindsight_core"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "hindsight_core":
            found.append((node.lineno, node.module))
            if node.module == "hindsight_core":  # `from hindsight_core import engine` reaches a submodule
                found += [(node.lineno, f"hindsight_core.{a.name}") for a in node.names if a.name.islower()]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            for arg in node.args[:1]:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("hindsight_core"):
                    found.append((node.lineno, str(arg.value)))
    return found


def _files() -> list[Path]:
    return sorted(p for package in ADAPTERS for p in (ROOT / package).rglob("*.py"))


def test_the_adapter_packages_exist() -> None:
    assert len(_files()) >= 10


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_import_only_the_public_core(path: Path) -> None:
    bad = [f"line {line} imports {module}" for line, module in _core_imports(path) if module not in ALLOWED]
    assert bad == []


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from hindsight_core import Hindsight, engine\n"
        "def f():\n    from hindsight_core.validation import check_namespace\n"
        "import hindsight_core.transcripts\n"
        "from hindsight_core.integration import resolve_engine\n",
        encoding="utf-8",
    )
    modules = sorted(m for _, m in _core_imports(sample) if m not in ALLOWED)
    assert modules == ["hindsight_core.engine", "hindsight_core.transcripts", "hindsight_core.validation"]


def test_integration_names_resolve() -> None:
    """Every name the integration module exports exists (the lazy ones included)."""
    import hindsight_core.integration as integration

    for name in integration.__all__:
        assert getattr(integration, name) is not None, name
