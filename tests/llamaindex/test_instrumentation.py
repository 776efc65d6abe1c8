"""Recall inside HindsightMemory and HindsightMemoryBlock emits LlamaIndex instrumentation events
(what Arize Phoenix and other handlers record): the query, then the hits as scored nodes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory

from hindsight_core import Hindsight
from hindsight_llamaindex import HindsightMemory, HindsightMemoryBlock, recall_tool


class Collect(BaseEventHandler):
    events: list[Any] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, RetrievalStartEvent | RetrievalEndEvent):
            self.events.append(event)


@pytest.fixture
def events() -> Iterator[list[Any]]:
    root = get_dispatcher()
    handler = Collect(events=[])
    root.add_event_handler(handler)
    try:
        yield handler.events
    finally:
        root.event_handlers.remove(handler)


def _ns() -> str:
    return f"user:{uuid.uuid4().hex[:8]}"


def _check(events: list[Any], query: str, text: str) -> None:
    start, end = events[-2], events[-1]
    assert isinstance(start, RetrievalStartEvent) and start.str_or_query_bundle == query
    assert isinstance(end, RetrievalEndEvent) and end.str_or_query_bundle == query
    node = next(n for n in end.nodes if n.node.get_content() == text)  # what recall found, before the
    assert isinstance(node.score, float)  # memory leaves out the turns its window already shows
    assert node.node.metadata["memory_id"] == node.node.node_id


def test_memory_get_emits_the_recall(shared_hs: Hindsight, events: list[Any]) -> None:
    ns = _ns()
    shared_hs.record("I am allergic to peanuts", ns, session_id="earlier")
    memory = HindsightMemory.from_defaults(namespace=ns, engine=shared_hs)
    memory.put(ChatMessage(role="user", content="What am I allergic to?"))
    memory.get()
    _check(events, "What am I allergic to?", "I am allergic to peanuts")


async def test_memory_block_emits_the_recall(shared_hs: Hindsight, events: list[Any]) -> None:
    ns = _ns()
    shared_hs.record("My budget for the Lisbon trip is 3000 euros", ns, session_id="earlier")
    block = HindsightMemoryBlock(namespace=ns, engine=shared_hs)
    memory = Memory.from_defaults(session_id="now", token_limit=4000, memory_blocks=[block])
    await memory.aput(ChatMessage(role="user", content="What is my Lisbon trip budget?"))
    await memory.aget()
    _check(events, "What is my Lisbon trip budget?", "My budget for the Lisbon trip is 3000 euros")


def test_recall_tool_emits_the_recall(shared_hs: Hindsight, events: list[Any]) -> None:
    ns = _ns()
    shared_hs.record("My passport expires in May 2027", ns)
    recall_tool(ns, engine=shared_hs).call(query="When does my passport expire?")
    _check(events, "When does my passport expire?", "My passport expires in May 2027")
