"""``hindsight worker``: the long-running process of a deployment (see docs/deploy.md).

It opens the data set the way every command does (``--path``, ``--database-url``/``$HINDSIGHT_DATABASE_URL``,
``--chroma-url``, ``--redis-url``) and runs :class:`~hindsight_core.lifecycle.worker.DeploymentWorker`
until SIGTERM or SIGINT, which end it after the step in progress (exit code 0)."""

from __future__ import annotations

import importlib
import logging
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from hindsight_core.cli.app import BAD_INPUT as _BAD_INPUT
from hindsight_core.cli.app import _Failure, _handled, _settings, app


def _load_extractor(spec: str) -> Any:
    """``module:attribute``: an extractor object, or a callable returning one (a factory that reads its
    model settings from the environment, say)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise _Failure(_BAD_INPUT, f"--extractor must be module:attribute, got {spec!r}")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise _Failure(_BAD_INPUT, f"--extractor {spec!r} cannot be loaded: {exc}") from exc
    return target if callable(getattr(target, "extract", None)) else target()


def _load_config(path: Path | None, lease_s: float | None) -> Any:
    from pydantic import ValidationError

    from hindsight_core.config import HindsightConfig

    try:
        config = HindsightConfig.model_validate_json(path.read_text(encoding="utf-8")) if path else HindsightConfig()
    except (OSError, ValidationError) as exc:
        raise _Failure(_BAD_INPUT, f"--config {path}: {exc}") from exc
    if lease_s is not None:
        config.lifecycle.consolidation_lease_s = lease_s
    # a worker never waits for a namespace another process is consolidating: it serves the others
    config.lifecycle.consolidation_wait_s = 0.0
    return config


@app.command()
@_handled
def worker(
    interval: Annotated[float, typer.Option(min=0.05, help="Seconds between passes.")] = 2.0,
    min_episodes: Annotated[
        int | None,
        typer.Option(min=1, help="Consolidate a namespace once this many episodes wait "
                     "[default: lifecycle.consolidate_every]."),
    ] = None,
    max_wait: Annotated[
        float, typer.Option(min=0.0, help="... or once its oldest unconsolidated episode is this many seconds old.")
    ] = 300.0,
    sweep_interval: Annotated[
        float, typer.Option(min=1.0, help="Seconds between sweeps, across all workers.")
    ] = 3600.0,
    lease: Annotated[
        float | None, typer.Option(min=0.5, help="Consolidation lease in seconds [default: from the config].")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="A HindsightConfig as JSON (docs/configuration.md).")
    ] = None,
    extractor: Annotated[
        str | None, typer.Option(help="module:attribute of an extractor or its factory [default: the rules].")
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit (cron, tests).")] = False,
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING.")] = "INFO",
) -> None:
    """Run the background work of a deployment: drain the outbox, consolidate, sweep; until SIGTERM."""
    from hindsight_core.engine import Hindsight, default_path
    from hindsight_core.lifecycle.worker import DeploymentWorker

    logging.basicConfig(
        level=log_level.upper(), stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s [pid %(process)d] %(message)s",
    )
    s = _settings()
    kwargs: dict[str, Any] = {"background_consolidation": False, **s.engine_kwargs}
    kwargs["config"] = _load_config(config, lease)
    if extractor is not None:
        kwargs["extractor"] = _load_extractor(extractor)
    hs = Hindsight(s.path or default_path(), redis_url=s.redis_url or None, chroma_url=s.chroma_url or None,
                   database_url=s.database_url or None, **kwargs)
    try:
        loop = DeploymentWorker(hs, interval_s=interval, min_episodes=min_episodes, max_wait_s=max_wait,
                                sweep_interval_s=sweep_interval)

        def stop(signum: int, _frame: object) -> None:
            logging.getLogger("hindsight.lifecycle").info(
                "worker %s: %s received, stopping after the current step", loop.owner, signal.Signals(signum).name
            )
            loop.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        loop.run(once=once)
    finally:
        hs.close()


__all__ = ["worker"]
