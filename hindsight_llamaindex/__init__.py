"""LlamaIndex adapters: the Hindsight engine as the memory of LlamaIndex agents and chat engines.

``FunctionAgent(..., )`` + ``agent.run(msg, memory=HindsightMemory.from_defaults(namespace="user:1"))``.
Needs the ``llamaindex`` extra (``pip install 'hindsight-memory[llamaindex]'``); importing without it
raises an ``ImportError`` that names the extra."""

from __future__ import annotations

from hindsight_core.integration import require

require("llama_index.core", "llamaindex")  # before any submodule imports LlamaIndex

from hindsight_llamaindex.chat_store import HindsightChatStore  # noqa: E402
from hindsight_llamaindex.llm import LlamaIndexLLM, llm_extractor  # noqa: E402
from hindsight_llamaindex.memory import HindsightMemory  # noqa: E402
from hindsight_llamaindex.memory_block import HindsightMemoryBlock  # noqa: E402
from hindsight_llamaindex.retriever import HindsightRetriever  # noqa: E402
from hindsight_llamaindex.tools import forget_tool, memory_tools, recall_tool, retain_tool  # noqa: E402

__all__ = [
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
