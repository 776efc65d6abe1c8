"""The public surface of ``hindsight_llamaindex`` is pinned: adding or dropping a name is a decision."""

from __future__ import annotations

import hindsight_llamaindex


def test_public_names_are_pinned() -> None:
    assert hindsight_llamaindex.__all__ == [
        "HindsightChatStore",
        "HindsightMemory",
        "HindsightMemoryBlock",
        "HindsightRetriever",
        "LlamaIndexLLM",
        "forget_tool",
        "llm_extractor",
        "memory_tools",
        "recall_tool",
        "retain_tool",
    ]
    assert all(getattr(hindsight_llamaindex, name) is not None for name in hindsight_llamaindex.__all__)
