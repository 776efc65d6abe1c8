"""The ``hindsight`` console script (``hindsight --help``). typer and rich load only when it runs."""

from __future__ import annotations


def main() -> None:
    from hindsight_core.cli.app import main as run

    run()


__all__ = ["main"]
