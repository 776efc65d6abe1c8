"""LangChain and LangGraph adapters for the Hindsight engine.

Names load lazily, so ``from hindsight_langchain import HindsightStore`` needs only LangGraph and
``HindsightMemory`` only ``langchain-classic``; a missing framework raises an ``ImportError`` naming
the ``hindsight-memory[langchain]`` extra."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight_langchain.chat_history import HindsightChatMessageHistory
    from hindsight_langchain.llm import ChatModelLLM, llm_extractor
    from hindsight_langchain.memory import HindsightMemory
    from hindsight_langchain.middleware import HindsightMemoryMiddleware, HindsightRecall
    from hindsight_langchain.retriever import HindsightRetriever
    from hindsight_langchain.runnable import HindsightRunnable, with_memory
    from hindsight_langchain.store import HindsightStore
    from hindsight_langchain.tools import forget_tool, memory_tools, recall_tool, retain_tool

_EXPORTS = {
    "HindsightMemory": "hindsight_langchain.memory",
    "HindsightChatMessageHistory": "hindsight_langchain.chat_history",
    "HindsightRetriever": "hindsight_langchain.retriever",
    "HindsightStore": "hindsight_langchain.store",
    "HindsightMemoryMiddleware": "hindsight_langchain.middleware",
    "HindsightRecall": "hindsight_langchain.middleware",
    "HindsightRunnable": "hindsight_langchain.runnable",
    "with_memory": "hindsight_langchain.runnable",
    "recall_tool": "hindsight_langchain.tools",
    "retain_tool": "hindsight_langchain.tools",
    "memory_tools": "hindsight_langchain.tools",
    "forget_tool": "hindsight_langchain.tools",
    "ChatModelLLM": "hindsight_langchain.llm",
    "llm_extractor": "hindsight_langchain.llm",
}

__all__ = [
    "ChatModelLLM",
    "HindsightChatMessageHistory",
    "HindsightMemory",
    "HindsightMemoryMiddleware",
    "HindsightRecall",
    "HindsightRetriever",
    "HindsightRunnable",
    "HindsightStore",
    "forget_tool",
    "llm_extractor",
    "memory_tools",
    "recall_tool",
    "retain_tool",
    "with_memory",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hindsight_langchain' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
