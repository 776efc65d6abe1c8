"""Every LangChain adapter built without a namespace is refused with ``InvalidInputError`` and a hint
(whose memory is this, e.g. ``namespace='user:42'``), before it opens the process-wide engine: no adapter
falls back to a shared ``"default"`` namespace every user would read and write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hindsight_langchain import (
    HindsightChatMessageHistory,
    HindsightMemory,
    HindsightRetriever,
    memory_tools,
    recall_tool,
    retain_tool,
    with_memory,
)
from tests.conftest import assert_refused_without_namespace

from .conftest import RecordingListModel

BUILDS: dict[str, Callable[[], Any]] = {
    "HindsightMemory()": lambda: HindsightMemory(),
    "HindsightMemory(namespace=None)": lambda: HindsightMemory(namespace=None),
    "HindsightRetriever()": lambda: HindsightRetriever(),
    "HindsightChatMessageHistory(None, ...)": lambda: HindsightChatMessageHistory(None, "s1"),  # type: ignore[arg-type]
    "memory_tools(None)": lambda: memory_tools(None),  # type: ignore[arg-type]
    "recall_tool(None)": lambda: recall_tool(None),  # type: ignore[arg-type]
    "retain_tool(None)": lambda: retain_tool(None),  # type: ignore[arg-type]
    "with_memory(namespace=None)": lambda: with_memory(RecordingListModel(responses=["hi"]), namespace=None),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("build", list(BUILDS.values()), ids=list(BUILDS))
def test_an_adapter_without_a_namespace_is_refused_with_a_hint(build: Callable[[], Any], default_dir: Path) -> None:
    assert_refused_without_namespace(build, default_dir)
