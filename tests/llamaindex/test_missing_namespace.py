"""Every LlamaIndex adapter built without a namespace is refused with ``InvalidInputError`` and a hint
(whose memory is this, e.g. ``namespace='user:42'``), before it opens the process-wide engine: no adapter
falls back to a shared ``"default"`` namespace every user would read and write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import hindsight_core.engine as engine_module
from hindsight_core import InvalidInputError
from hindsight_llamaindex import (
    HindsightChatStore,
    HindsightMemory,
    HindsightMemoryBlock,
    HindsightRetriever,
    memory_tools,
)
from hindsight_llamaindex.tools import recall_tool, retain_tool

HINT = r"needs namespace=\.\.\.: whose memory is this\? .*e\.g\. namespace='user:42'"

BUILDS: dict[str, Callable[[], Any]] = {
    "HindsightMemory()": lambda: HindsightMemory(),
    "HindsightMemory.from_defaults()": lambda: HindsightMemory.from_defaults(),
    "HindsightMemoryBlock()": lambda: HindsightMemoryBlock(),
    "HindsightRetriever()": lambda: HindsightRetriever(),
    "HindsightChatStore()": lambda: HindsightChatStore(),
    "HindsightChatStore.from_defaults()": lambda: HindsightChatStore.from_defaults(),
    "memory_tools()": lambda: memory_tools(),
    "memory_tools(None)": lambda: memory_tools(None),
    "recall_tool()": lambda: recall_tool(),
    "retain_tool()": lambda: retain_tool(),
}


@pytest.fixture
def default_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Where the process-wide engine would open (none is open yet)."""
    monkeypatch.setenv("HINDSIGHT_PATH", str(tmp_path / "default"))
    monkeypatch.setattr(engine_module, "_shared", None)
    yield tmp_path / "default"
    if engine_module._shared is not None:
        engine_module._shared.close()


@pytest.mark.parametrize("build", list(BUILDS.values()), ids=list(BUILDS))
def test_an_adapter_without_a_namespace_is_refused_with_a_hint(build: Callable[[], Any], default_dir: Path) -> None:
    with pytest.raises(InvalidInputError, match=HINT):
        build()
    assert engine_module._shared is None and not default_dir.exists()  # no default engine, no shared namespace
