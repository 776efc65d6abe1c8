"""``hindsight worker``: the long-running process of a deployment (see docs/deploy.md).

The command (in ``cli/app.py``) opens the data set the way every command does and hands it to
:func:`serve`, which runs :class:`~hindsight_core.lifecycle.worker.DeploymentWorker` until SIGTERM or
SIGINT; they end it after the step in progress (exit code 0)."""

from __future__ import annotations

import importlib
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_core.errors import InvalidInputError

if TYPE_CHECKING:
    from hindsight_core.engine import Hindsight


def load_extractor(spec: str) -> Any:
    """``module:attribute``: an extractor object, or a callable returning one (a factory that reads its
    model settings from the environment, say)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise InvalidInputError(f"--extractor must be module:attribute, got {spec!r}")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise InvalidInputError(f"--extractor {spec!r} cannot be loaded: {exc}") from exc
    return target if callable(getattr(target, "extract", None)) else target()


def load_config(path: Path | None, lease_s: float | None) -> Any:
    from pydantic import ValidationError

    from hindsight_core.config import HindsightConfig

    try:
        config = HindsightConfig.model_validate_json(path.read_text(encoding="utf-8")) if path else HindsightConfig()
    except (OSError, ValidationError) as exc:
        raise InvalidInputError(f"--config {path}: {exc}") from exc
    if lease_s is not None:
        config.lifecycle.consolidation_lease_s = lease_s
    # a worker never waits for a namespace another process is consolidating: it serves the others
    config.lifecycle.consolidation_wait_s = 0.0
    return config


def serve(hs: Hindsight, *, interval_s: float, min_episodes: int | None, max_wait_s: float,
          sweep_interval_s: float, once: bool, log_level: str) -> None:
    from hindsight_core.lifecycle.worker import DeploymentWorker

    logging.basicConfig(
        level=log_level.upper(), stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s [pid %(process)d] %(message)s",
    )
    loop = DeploymentWorker(hs, interval_s=interval_s, min_episodes=min_episodes, max_wait_s=max_wait_s,
                            sweep_interval_s=sweep_interval_s)

    def stop(signum: int, _frame: object) -> None:
        logging.getLogger("hindsight.lifecycle").info(
            "worker %s: %s received, stopping after the current step", loop.owner, signal.Signals(signum).name
        )
        loop.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    loop.run(once=once)


__all__ = ["load_config", "load_extractor", "serve"]
