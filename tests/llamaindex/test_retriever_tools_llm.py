"""HindsightRetriever, the recall/retain tools, the consolidation LLM wrapper, and the missing-extra error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM, MockLLM
from llama_index.core.schema import NodeWithScore
from llama_index.core.tools import FunctionTool

from hindsight_core import Hindsight, InvalidInputError, Layer
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_llamaindex import HindsightRetriever, LlamaIndexLLM, llm_extractor, memory_tools

FACT = "I am allergic to peanuts"


def _ns() -> str:
    return f"user:{uuid.uuid4().hex[:8]}"


def test_retriever_returns_nodes_with_the_memory_metadata(shared_hs: Hindsight) -> None:
    ns = _ns()
    stored = shared_hs.record(FACT, ns, session_id="s1", importance=5)
    shared_hs.record("I love hiking in the Alps", _ns(), session_id="s1")  # another user's
    retriever = HindsightRetriever(ns, engine=shared_hs)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve("What am I allergic to?")
    assert [type(n) for n in nodes] == [NodeWithScore]
    top = nodes[0]
    assert top.node.node_id == stored.id and FACT in top.node.get_content()
    meta = top.node.metadata
    assert (meta["memory_id"], meta["namespace"], meta["layer"], meta["kind"], meta["session_id"]) == (
        stored.id,
        ns,
        "episodic",
        "turn",
        "s1",
    )
    assert meta["importance"] == 5 and top.score == pytest.approx(meta["score"]) and meta["channels"]
    assert "memory_id" not in top.node.get_content(metadata_mode="llm")  # bookkeeping stays out of prompts
    assert retriever.retrieve("hiking in the Alps") == []  # namespaces are walls


async def test_retriever_async_matches_sync(shared_hs: Hindsight) -> None:
    ns = _ns()
    shared_hs.record(FACT, ns)
    retriever = HindsightRetriever(ns, engine=shared_hs, k=2)
    sync = [n.node.node_id for n in retriever.retrieve("What am I allergic to?")]
    assert sync and [n.node.node_id for n in await retriever.aretrieve("What am I allergic to?")] == sync
    with pytest.raises(InvalidInputError):
        HindsightRetriever("bad namespace", engine=shared_hs)


async def test_tools_retain_then_recall_sync_and_async(shared_hs: Hindsight) -> None:
    ns = _ns()
    recall, retain, _ = memory_tools(ns, engine=shared_hs, session_id="tools")
    assert all(isinstance(t, FunctionTool) for t in (recall, retain))
    assert {recall.metadata.name, retain.metadata.name} == {"recall_memory", "save_memory"}
    assert "Saved memory" in str(retain.call(content="The user's passport expires in May 2027"))
    assert "Saved memory" in str(await retain.acall(content=FACT))
    found = await shared_hs.afind(ns, session_id="tools")
    assert [m.content for m in found] == ["The user's passport expires in May 2027", FACT]
    assert "passport expires in May 2027" in str(recall.call(query="my passport"))
    assert FACT in str(await recall.acall(query="What am I allergic to?"))
    assert str(recall.call(query="What is the capital of Mongolia?")) == "No relevant memories."
    other_recall, *_ = memory_tools(_ns(), engine=shared_hs)
    assert str(other_recall.call(query="What am I allergic to?")) == "No relevant memories."


def _scripted_extraction(messages: Any, **kwargs: Any) -> ChatMessage:
    """A model that reads the episode ids from the extractor's prompt and answers in prose-wrapped JSON."""
    prompt = str(messages[-1].content)
    ids = re.findall(r"^\[([0-9A-Z]{26})\] \d{4}-\d\d-\d\d", prompt, flags=re.MULTILINE)
    reply = {
        "memories": [
            {
                "kind": "fact",
                "content": "The user is allergic to peanuts.",
                "importance": 5,
                "entities": ["peanuts"],
                "source_ids": ids[:1],
            }
        ]
    }
    return ChatMessage(role="assistant", content=f"Here you go:\n```json\n{json.dumps(reply)}\n```")


def test_llamaindex_llm_drives_consolidation(fresh_path: Path, embedder: E5Embedder) -> None:
    llm = MockFunctionCallingLLM(is_chat_model=True, response_generator=_scripted_extraction)
    with Hindsight(fresh_path, embedder=embedder, extractor=llm_extractor(llm), background_consolidation=False) as hs:
        episode = hs.record(FACT, "user:1", session_id="s")
        report = hs.consolidate("user:1")
        assert report.status == "done" and report.created == 1
        semantic = hs.find("user:1", layer=Layer.SEMANTIC)
        assert [m.content for m in semantic] == ["The user is allergic to peanuts."]
        assert episode.id in semantic[0].source_ids


def test_llm_wrapper_passes_invalid_replies_through() -> None:
    # A completion model (MockLLM echoes its prompt): no valid JSON in the reply, so the extractor gets
    # the text unchanged and can send the validation error back.
    assert LlamaIndexLLM(MockLLM())("no json here") == "no json here"
    with pytest.raises(TypeError):
        LlamaIndexLLM("not an llm")  # type: ignore[arg-type]


def test_missing_llama_index_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['llama_index'] = None\n"
        "sys.modules['llama_index.core'] = None\n"
        "try:\n"
        "    import hindsight_llamaindex\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "else:\n"
        "    print('imported')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.startswith("MissingExtraError") and "hindsight-memory[llamaindex]" in out.stdout


def test_retriever_nodes_of_distilled_memories_cite_their_episodes(shared_hs: Hindsight) -> None:
    ns = _ns()
    episode = shared_hs.record("I'm allergic to peanuts", ns, session_id="s1")
    assert shared_hs.consolidate(ns).created >= 1
    nodes = HindsightRetriever(ns, engine=shared_hs, layers=["semantic"]).retrieve("What am I allergic to?")
    assert nodes, "the distilled fact was not recalled"
    meta = nodes[0].node.metadata
    assert meta["layer"] == "semantic" and episode.id in meta["source_ids"]
    assert any("peanuts" in s for s in meta["sources"])
