"""HindsightMemoryBlock inside LlamaIndex's own ``Memory``."""

from __future__ import annotations

import uuid

from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import Memory, StaticMemoryBlock

from hindsight_core import Hindsight
from hindsight_llamaindex import HindsightMemoryBlock

ALLERGY = "I am allergic to peanuts and to shellfish"
FACTS = [
    "My budget for the Lisbon trip is 3000 euros",
    "For the Lisbon trip I want a hotel near the river",
    "In Lisbon I want to eat pastel de nata",
]
PLAN = "Plan my Lisbon trip"


def _ns() -> str:
    return f"user:{uuid.uuid4().hex[:8]}"


def _system(messages: list[ChatMessage]) -> str:
    return "\n".join(str(m.content) for m in messages if m.role == MessageRole.SYSTEM)


async def test_block_text_appears_in_the_system_message(shared_hs: Hindsight) -> None:
    ns = _ns()
    shared_hs.record(ALLERGY, ns, session_id="earlier")
    block = HindsightMemoryBlock(namespace=ns, engine=shared_hs)
    memory = Memory.from_defaults(session_id="now", token_limit=4000, memory_blocks=[block])
    await memory.aput(ChatMessage(role="user", content="What am I allergic to?"))
    messages = await memory.aget()
    system = _system(messages)
    assert "<hindsight_memory>" in system and ALLERGY in system
    assert messages[-1].content == "What am I allergic to?"


async def test_empty_recall_adds_nothing(shared_hs: Hindsight) -> None:
    ns = _ns()
    shared_hs.record(FACTS[1], ns, session_id="earlier")
    memory = Memory.from_defaults(
        session_id="now",
        token_limit=4000,
        memory_blocks=[HindsightMemoryBlock(namespace=ns, engine=shared_hs)],
    )
    await memory.aput(ChatMessage(role="user", content="What is the capital of Mongolia?"))
    messages = await memory.aget()
    assert [m.role for m in messages] == [MessageRole.USER]
    empty = HindsightMemoryBlock(namespace=_ns(), engine=shared_hs)  # a namespace with no memories at all
    assert await empty.aget([ChatMessage(role="user", content="What am I allergic to?")]) == ""


async def test_truncation_drops_lowest_scored_memories_first(shared_hs: Hindsight) -> None:
    ns = _ns()
    for fact in FACTS:
        shared_hs.record(fact, ns, session_id="earlier")
    block = HindsightMemoryBlock(namespace=ns, engine=shared_hs, priority=1, k=3)
    query = [ChatMessage(role="user", content=PLAN)]
    full = await block.aget(query)
    recall = block.last_recall
    assert recall is not None and len(recall.hits) >= 2
    ranked = [h.memory.content for h in sorted(recall.hits, key=lambda h: h.score)]
    cut = await block.atruncate(full, 1)  # one token to free: exactly the weakest memory goes
    assert cut is not None and ranked[0] not in cut and all(c in cut for c in ranked[1:])
    assert await block.atruncate(full, 10_000) is None
    assert await block.atruncate("text this block never produced", 1) is None


async def test_memory_truncates_by_priority(shared_hs: Hindsight) -> None:
    ns = _ns()
    for fact in FACTS:
        shared_hs.record(fact, ns, session_id="earlier")
    pinned = StaticMemoryBlock(name="profile", static_content="The user's name is Ana.", priority=0)
    recalled = HindsightMemoryBlock(namespace=ns, engine=shared_hs, priority=1, k=3)
    roomy = Memory.from_defaults(session_id="a", token_limit=4000, memory_blocks=[pinned, recalled])
    await roomy.aput(ChatMessage(role="user", content=PLAN))
    full = _system(await roomy.aget())
    assert recalled.last_recall is not None
    ranked = [h.memory.content for h in sorted(recalled.last_recall.hits, key=lambda h: h.score)]
    assert len(ranked) >= 2 and all(f in full for f in ranked)
    # A limit one token short of what everything needs: the weakest memory, and only it, must go.
    needed = roomy._estimate_token_count(await roomy.aget_all()) + sum(
        roomy._estimate_token_count(content)
        for content in (await pinned.aget(), await recalled.aget([ChatMessage(role="user", content=PLAN)]))
    )
    tight = Memory.from_defaults(session_id="b", token_limit=needed - 1, memory_blocks=[pinned, recalled])
    await tight.aput(ChatMessage(role="user", content=PLAN))
    cut = _system(await tight.aget())
    assert "The user's name is Ana." in cut  # priority 0 is never cut
    assert ranked[0] not in cut and all(f in cut for f in ranked[1:])


async def test_flushed_messages_are_recorded_without_the_session_stamp(shared_hs: Hindsight) -> None:
    ns = _ns()
    block = HindsightMemoryBlock(namespace=ns, engine=shared_hs)
    memory = Memory.from_defaults(
        session_id="flush-me",
        token_limit=60,
        token_flush_size=20,
        chat_history_token_ratio=0.5,
        memory_blocks=[block],
    )
    for i in range(6):
        role = "user" if i % 2 == 0 else "assistant"
        await memory.aput(ChatMessage(role=role, content=f"message {i}: my favourite colour is number {i}"))
    episodes = shared_hs.find(ns, layer="episodic")
    assert episodes, "Memory flushed nothing to the block"
    assert {e.session_id for e in episodes} == {"flush-me"}
    assert [e.content for e in episodes] == [
        f"message {i}: my favourite colour is number {i}" for i in range(len(episodes))
    ]
    assert all("session_id" not in e.metadata for e in episodes)
    assert [e.role for e in episodes][:2] == ["user", "assistant"]
