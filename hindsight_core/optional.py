"""Optional dependencies fail with an install hint instead of a bare ``ModuleNotFoundError``."""

from __future__ import annotations

import importlib
from types import ModuleType

from hindsight_core.errors import MissingExtraError


def require(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # a broken transitive import is reported the same way, with its cause
        raise MissingExtraError(
            f"{module!r} is needed for this feature but could not be imported ({exc}). "
            f"Install it with: pip install 'hindsight-memory[{extra}]'"
        ) from exc
