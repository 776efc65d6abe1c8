"""Every LangChain adapter built without a namespace is refused with ``InvalidInputError`` and a hint
(whose memory is this, e.g. ``namespace='user:42'``), before it opens the process-wide engine: no adapter
falls back to a shared ``"default"`` namespace every user would read and write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import hindsight_core.engine as engine_module
from hindsight_core import InvalidInputError
from hindsight_langchain import (
    HindsightChatMessageHistory,
    HindsightMemory,
    HindsightRetriever,
    memory_tools,
    recall_tool,
    retain_tool,
    with_memory,
)

from .conftest import RecordingListModel

HINT = r"needs namespace=\.\.\.: whose memory is this\? .*e\.g\. namespace='user:42'"

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
