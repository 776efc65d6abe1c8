"""HindsightMemory(starting_memories=...) with a real FunctionAgent-free memory read: a new user's first
``get`` injects the template; a bad template is refused."""

from __future__ import annotations

import uuid

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from hindsight_core import Hindsight, InvalidInputError
from hindsight_llamaindex import HindsightMemory

UNITS = "The user prefers metric units."


def _injected(shared_hs: Hindsight, namespace: str, template: object) -> str:
    memory = HindsightMemory.from_defaults(namespace=namespace, engine=shared_hs, starting_memories=template)
    memory.put(ChatMessage(role=MessageRole.USER, content="Which units should you use for me?"))
    return "\n".join(str(m.content) for m in memory.get() if m.role == MessageRole.SYSTEM)


def test_a_new_user_starts_with_the_template(shared_hs: Hindsight) -> None:
    ana, bo = (f"user:{uuid.uuid4().hex[:10]}" for _ in range(2))
    assert UNITS not in _injected(shared_hs, ana, None)
    assert UNITS in _injected(shared_hs, bo, [UNITS])
    assert [m.content for m in shared_hs.find(bo) if m.starting] == [UNITS]
    _injected(shared_hs, bo, [UNITS])
    assert [m.content for m in shared_hs.find(bo) if m.starting] == [UNITS]


async def test_async_get_applies_it_too(shared_hs: Hindsight) -> None:
    ns = f"user:{uuid.uuid4().hex[:10]}"
    memory = HindsightMemory.from_defaults(namespace=ns, engine=shared_hs, starting_memories=[UNITS])
    await memory.aput(ChatMessage(role=MessageRole.USER, content="Which units should you use for me?"))
    assert any(UNITS in str(m.content) for m in await memory.aget())


def test_a_bad_template_is_refused_at_construction(shared_hs: Hindsight) -> None:
    with pytest.raises(InvalidInputError):
        HindsightMemory.from_defaults(namespace="user:x", engine=shared_hs, starting_memories=[{"content": ""}])
