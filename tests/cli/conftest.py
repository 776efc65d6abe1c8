"""Fixtures for the CLI tests: the typer app run in-process against a real embedded engine directory,
on the fixed clock and the shared e5 embedder (passed to the engine through the click ``obj``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hindsight_core import Hindsight

Run = Callable[..., Any]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def open_engine(clock: Any, embedder: Any) -> Iterator[Callable[[Path], Hindsight]]:
    """Open an engine on a directory (closed at the end unless the test closed it)."""
    engines: list[Hindsight] = []

    def make(path: Path) -> Hindsight:
        hs = Hindsight(path, clock=clock, embedder=embedder, background_consolidation=False)
        engines.append(hs)
        return hs

    yield make
    for hs in engines:
        hs.close()


@pytest.fixture
def cli(data_dir: Path, clock: Any, embedder: Any) -> Run:
    """``cli("ls", "u1", "--json")`` runs ``hindsight --path DATA ls u1 --json``; ``path=`` picks another
    directory. The result has ``exit_code``, ``stdout``, ``stderr`` and ``.json()``."""
    from hindsight_core.cli.app import app

    def run(*args: str, path: Path | None = None, input: str | None = None) -> Any:
        runner = CliRunner()
        result = runner.invoke(
            app, ["--path", str(path or data_dir), "--no-progress", *args], input=input,
            obj={"clock": clock, "embedder": embedder},
        )
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        result.json = lambda: json.loads(result.stdout)  # type: ignore[attr-defined]
        return result

    return run
