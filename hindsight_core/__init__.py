"""Hindsight memory: the engine. ``from hindsight_core import Hindsight``.

Names are resolved lazily so ``import hindsight_core`` stays fast (no chromadb, torch or jieba)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight_core.config import HindsightConfig
    from hindsight_core.engine import Hindsight, shared_engine
    from hindsight_core.errors import (
        BackendUnavailableError,
        DataDirectoryInUseError,
        EmbedderMismatchError,
        EngineClosedError,
        EngineForkedError,
        ForeignDataSetError,
        HindsightError,
        InvalidInputError,
        MemoryArchivedError,
        MemoryNotFoundError,
        MissingExtraError,
        UnknownNamespaceError,
    )
    from hindsight_core.lifecycle.extractors import LLMExtractor, RuleExtractor
    from hindsight_core.lifecycle.types import ConsolidationReport, SweepReport
    from hindsight_core.recall.types import Conflict, QueryAnalysis, RecallHit, RecallResult
    from hindsight_core.starting_template import StartingMemories, StartingMemory
    from hindsight_core.types import (
        ChainLink,
        Edge,
        EdgeKind,
        Event,
        Grant,
        Kind,
        Layer,
        Memory,
        MemoryDemotion,
        MemoryEdit,
        MemoryHistory,
        Stats,
        Status,
    )

from hindsight_core.version import __version__

_EXPORTS = {
    "Hindsight": "hindsight_core.engine",
    "shared_engine": "hindsight_core.engine",
    "HindsightConfig": "hindsight_core.config",
    "Memory": "hindsight_core.types",
    "MemoryDemotion": "hindsight_core.types",
    "MemoryEdit": "hindsight_core.types",
    "MemoryHistory": "hindsight_core.types",
    "StartingMemories": "hindsight_core.starting_template",
    "StartingMemory": "hindsight_core.starting_template",
    "ChainLink": "hindsight_core.types",
    "Event": "hindsight_core.types",
    "Grant": "hindsight_core.types",
    "Edge": "hindsight_core.types",
    "EdgeKind": "hindsight_core.types",
    "Kind": "hindsight_core.types",
    "Layer": "hindsight_core.types",
    "Stats": "hindsight_core.types",
    "Status": "hindsight_core.types",
    "HindsightError": "hindsight_core.errors",
    "InvalidInputError": "hindsight_core.errors",
    "UnknownNamespaceError": "hindsight_core.errors",
    "MemoryNotFoundError": "hindsight_core.errors",
    "MemoryArchivedError": "hindsight_core.errors",
    "BackendUnavailableError": "hindsight_core.errors",
    "EngineClosedError": "hindsight_core.errors",
    "EngineForkedError": "hindsight_core.errors",
    "MissingExtraError": "hindsight_core.errors",
    "DataDirectoryInUseError": "hindsight_core.errors",
    "EmbedderMismatchError": "hindsight_core.errors",
    "ForeignDataSetError": "hindsight_core.errors",
    "RecallResult": "hindsight_core.recall.types",
    "RecallHit": "hindsight_core.recall.types",
    "Conflict": "hindsight_core.recall.types",
    "QueryAnalysis": "hindsight_core.recall.types",
    "ConsolidationReport": "hindsight_core.lifecycle.types",
    "SweepReport": "hindsight_core.lifecycle.types",
    "LLMExtractor": "hindsight_core.lifecycle.extractors",
    "RuleExtractor": "hindsight_core.lifecycle.extractors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hindsight_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
