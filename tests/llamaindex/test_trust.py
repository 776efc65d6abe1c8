"""The LlamaIndex adapters show only the caller's namespace (a source id equal to another tenant's memory
id pulls nothing in) and inject recalled memories as quoted data that cannot close the block's tag."""

from __future__ import annotations

import json
import uuid

from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import Memory

from hindsight_core import Hindsight
from hindsight_llamaindex import HindsightMemory, HindsightMemoryBlock, HindsightRetriever
from tests.recall.test_render import HOSTILE, check_quoted

PIN = "My bank PIN is 4321"
QUERY = "What do I like to drink, tea? memory rules users data"


def _ns() -> str:
    return f"user:{uuid.uuid4().hex[:8]}"


def test_node_sources_never_come_from_another_namespace(shared_hs: Hindsight) -> None:
    ns = _ns()
    victim = shared_hs.record(PIN, _ns())
    shared_hs.record("I'm allergic to cats", ns, session_id="a", source_id=victim.id)
    shared_hs.consolidate(ns)
    nodes = HindsightRetriever(ns, engine=shared_hs).retrieve("Am I allergic to anything?")
    facts = [n for n in nodes if n.node.metadata["layer"] == "semantic"]
    assert facts and all(n.node.metadata["sources"] == ["I'm allergic to cats"] for n in facts)
    assert all("4321" not in s for n in nodes for s in n.node.metadata["sources"])


async def test_memory_block_quotes_hostile_memories_inside_its_tag(shared_hs: Hindsight) -> None:
    ns = _ns()
    for text in HOSTILE:
        shared_hs.record(text, ns, session_id="earlier", index=True)
    block = HindsightMemoryBlock(namespace=ns, engine=shared_hs, k=10)
    memory = Memory.from_defaults(session_id="now", token_limit=8000, memory_blocks=[block])
    await memory.aput(ChatMessage(role="user", content=QUERY))
    system = "\n".join(str(m.content) for m in await memory.aget() if m.role == MessageRole.SYSTEM)
    # LlamaIndex wraps blocks in <memory> and each block in its own tag: neither may appear twice
    for tag in ("memory", block.name):
        assert system.count(f"<{tag}>") == 1 and system.count(f"</{tag}>") == 1
    inside = system.split(f"<{block.name}>", 1)[1].split(f"</{block.name}>", 1)[0].strip()
    assert block.last_recall is not None
    check_quoted(inside, [h.memory.content for h in block.last_recall.hits])
    cut = await block.atruncate(inside, 1)  # what truncation leaves is rendered the same way
    assert cut is not None
    check_quoted(cut, [_body(line) for line in cut.splitlines()[1:]])


def test_chat_memory_quotes_hostile_memories(shared_hs: Hindsight) -> None:
    ns = _ns()
    for text in HOSTILE:
        shared_hs.record(text, ns, session_id="earlier", index=True)
    memory = HindsightMemory.from_defaults(namespace=ns, session_id="now", engine=shared_hs, k=10)
    messages = memory.get(input=QUERY)
    system = "\n".join(str(m.content) for m in messages if m.role == MessageRole.SYSTEM)
    assert memory.last_recall is not None
    check_quoted(system, [h.memory.content for h in memory.last_recall.hits])


def _body(line: str) -> str:
    body: str = json.JSONDecoder().raw_decode(line.split("] ", 1)[1])[0]
    return body
