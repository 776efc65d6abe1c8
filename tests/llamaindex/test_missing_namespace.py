"""Every LlamaIndex adapter built without a namespace is refused with ``InvalidInputError`` and a hint
(whose memory is this, e.g. ``namespace='user:42'``), before it opens the process-wide engine: no adapter
falls back to a shared ``"default"`` namespace every user would read and write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hindsight_llamaindex import (
    HindsightChatStore,
    HindsightMemory,
    HindsightMemoryBlock,
    HindsightRetriever,
    memory_tools,
)
from hindsight_llamaindex.tools import recall_tool, retain_tool
from tests.conftest import assert_refused_without_namespace

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


@pytest.mark.parametrize("build", list(BUILDS.values()), ids=list(BUILDS))
def test_an_adapter_without_a_namespace_is_refused_with_a_hint(build: Callable[[], Any], default_dir: Path) -> None:
    assert_refused_without_namespace(build, default_dir)
