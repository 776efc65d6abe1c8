"""The user-facing docs name only things that exist: every adapter name they import is exported, every
``hindsight`` flag and command they mention is in the CLI, every ``HINDSIGHT_*`` variable is read, every
config option (``lifecycle.consolidate_every``) is a field, every extra is declared, every file is there
(issue 39: docs true to the code, checked claim by claim)."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/langchain.md", "docs/llamaindex.md", "docs/cli.md", "docs/ui.md", "docs/deploy.md"]
#: Flags the docs give to other programs (pip, uv, pytest, gunicorn, redis-server, the benchmarks).
FOREIGN_FLAGS = frozenset({
    "--index-url", "--resolution", "--nbmake", "--preload", "--bind", "--n", "--procs", "--size", "--run",
})


def _text(doc: str) -> str:
    return (ROOT / doc).read_text(encoding="utf-8")


def _exported(package: str) -> set[str]:
    return set(importlib.import_module(package).__all__)


def _imported(text: str, package: str) -> set[str]:
    names: set[str] = set()
    for match in re.finditer(rf"^from {package} import (\([^)]*\)|[^\n]*)", text, re.MULTILINE):
        names |= {n.strip() for n in match.group(1).strip("()").replace("\n", " ").split(",") if n.strip()}
    return names


@pytest.mark.parametrize("package", ["hindsight_langchain", "hindsight_llamaindex", "hindsight_core"])
def test_every_name_the_docs_import_is_exported(package: str) -> None:
    imported = set().union(*(_imported(_text(doc), package) for doc in DOCS))
    assert imported, f"no doc imports from {package}: the check would prove nothing"
    assert imported <= _exported(package), f"imported in the docs but not exported: {imported - _exported(package)}"
    module = importlib.import_module(package)
    assert all(getattr(module, name, None) is not None for name in imported)


def test_every_hindsight_class_the_docs_name_exists() -> None:
    exported = _exported("hindsight_core") | _exported("hindsight_langchain") | _exported("hindsight_llamaindex")
    named = {m for doc in DOCS for m in re.findall(r"\bHindsight[A-Z]\w*", _text(doc))}
    assert {"HindsightMemoryBlock", "HindsightStore"} <= named
    assert named <= exported, f"named in the docs, exported nowhere: {named - exported}"


def _cli() -> tuple[set[str], set[str]]:
    """(command names, every flag of the app and of its commands)."""
    import typer.main

    from hindsight_core.cli.app import app

    group = typer.main.get_command(app)
    commands = dict(getattr(group, "commands", {}))
    flags: set[str] = {"--help"}
    for command in [group, *commands.values()]:
        for param in command.params:
            flags |= {o for o in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
                      if o.startswith("--")}
    return set(commands), flags


def test_every_flag_the_docs_name_is_a_flag_of_the_cli() -> None:
    _, flags = _cli()
    assert not FOREIGN_FLAGS & flags, "a flag listed as another program's is the CLI's own: drop it from the list"
    named = {m for doc in DOCS for m in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", _text(doc))}
    assert {"--dry-run", "--max-wait"} <= named
    assert named - FOREIGN_FLAGS <= flags, f"flags in the docs the CLI does not have: {named - FOREIGN_FLAGS - flags}"


def test_cli_md_shows_the_help_of_every_command() -> None:
    commands, _ = _cli()
    shown = set(re.findall(r"^## `hindsight (\S+) --help`", _text("docs/cli.md"), re.MULTILINE))
    assert commands and shown == commands, f"missing: {commands - shown}, stale: {shown - commands}"


def test_every_environment_variable_the_docs_name_is_read_somewhere() -> None:
    sources = "\n".join(p.read_text(encoding="utf-8") for folder in ("hindsight_core", "tests", "benchmarks")
                        for p in (ROOT / folder).rglob("*.py") if p.name != Path(__file__).name)
    named = {m for doc in DOCS for m in re.findall(r"\bHINDSIGHT_[A-Z_]*[A-Z]", _text(doc))}
    assert {"HINDSIGHT_PATH", "HINDSIGHT_DATABASE_URL"} <= named
    unread = {v for v in named if f'"{v}"' not in sources}
    assert unread == set(), f"variables in the docs that no code reads: {unread}"


def test_every_config_option_the_docs_name_is_a_field() -> None:
    from hindsight_core import HindsightConfig

    config = HindsightConfig()
    named = {m for doc in DOCS
             for m in re.findall(r"\b(recall|lifecycle|write|activation)\.([a-z_]+)\b", _text(doc))}
    assert ("lifecycle", "consolidate_every") in named
    missing = {f"{section}.{field}" for section, field in named
               if not hasattr(getattr(config, section), field)}
    assert missing == set(), f"options in the docs HindsightConfig does not have: {missing}"


def test_the_extras_table_is_the_declared_extras() -> None:
    declared = set(tomllib.loads(_text("pyproject.toml"))["project"]["optional-dependencies"])
    table = _text("README.md").split("## Extras", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z]+)` \|", table, re.MULTILINE))
    assert listed == declared, f"only in the README: {listed - declared}, only in pyproject: {declared - listed}"


def test_every_file_the_docs_name_exists() -> None:
    named = {m for doc in DOCS
             for m in re.findall(r"`\.?([\w./-]+\.(?:py|sh|ipynb|md|toml|png)|\.ci/run)`", _text(doc))}
    named = {n for n in named if "/" in n or n.endswith(".md")}
    assert "scripts/test-resolutions.sh" in named
    missing = {n for n in named if not (ROOT / n).exists() and not (ROOT / "hindsight_core" / n).exists()}
    assert missing == set(), f"files the docs name that are not in the repository: {missing}"
