"""HindsightChatStore against LlamaIndex's reference SimpleChatStore, operation by operation."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ImageBlock, TextBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore

from hindsight_core import Hindsight, InvalidInputError
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_llamaindex import HindsightChatStore


def _ns() -> str:
    return f"user:{uuid.uuid4().hex[:8]}"


def _msg(i: int, role: str = "user") -> ChatMessage:
    return ChatMessage(role=role, content=f"message number {i} about the Lisbon trip budget")


def _dump(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, ChatMessage):
        return json.loads(value.model_dump_json())
    return [json.loads(m.model_dump_json()) for m in value]


def _state(store: Any) -> dict[str, Any]:
    return {key: _dump(store.get_messages(key)) for key in store.get_keys()}


# Operation sequences: every index position (first/middle/last/negative/out of range) and missing keys.
SEQUENCES: list[list[tuple[Any, ...]]] = [
    [
        ("add", "a", 0),
        ("add", "a", 1),
        ("add", "a", 2),
        ("add", "a", 3),
        ("del", "a", 0),
        ("del", "a", 1),
        ("del", "a", 1),
        ("get", "a"),
        ("del", "a", 5),
        ("last", "a"),
        ("get", "a"),
    ],
    [
        ("set", "k", 5),
        ("del", "k", -1),
        ("del", "k", -2),
        ("add", "k", 9),
        ("last", "k"),
        ("all", "k"),
        ("get", "k"),
        ("all", "k"),
        ("del", "missing", 0),
        ("last", "missing"),
        ("all", "missing"),
        ("get", "missing"),
    ],
    [
        ("add", "x", 1),
        ("set", "y", 2),
        ("add", "x", 3),
        ("set", "x", 0),
        ("all", "y"),
        ("add", "y", 7),
        ("insert", "x", 0, 42),
        ("insert", "x", 1, 43),
        ("set", "x", 3),
        ("get", "x"),
    ],
]


def _apply(store: Any, op: tuple[Any, ...], counter: list[int]) -> Any:
    name, key = op[0], op[1]
    if name == "add":
        return store.add_message(key, _msg(op[2], "user" if op[2] % 2 == 0 else "assistant"))
    if name == "insert":
        return store.add_message(key, _msg(op[3]), idx=op[2])
    if name == "set":
        return store.set_messages(key, [_msg(i) for i in range(op[2])])
    if name == "del":
        return _dump(store.delete_message(key, op[2]))
    if name == "last":
        return _dump(store.delete_last_message(key))
    if name == "all":
        return _dump(store.delete_messages(key))
    if name == "get":
        return _dump(store.get_messages(key))
    raise AssertionError(name)


async def _aapply(store: Any, op: tuple[Any, ...]) -> Any:
    name, key = op[0], op[1]
    if name == "add":
        return await store.async_add_message(key, _msg(op[2], "user" if op[2] % 2 == 0 else "assistant"))
    if name == "insert":
        return store.add_message(key, _msg(op[3]), idx=op[2])
    if name == "set":
        return await store.aset_messages(key, [_msg(i) for i in range(op[2])])
    if name == "del":
        return _dump(await store.adelete_message(key, op[2]))
    if name == "last":
        return _dump(await store.adelete_last_message(key))
    if name == "all":
        return _dump(await store.adelete_messages(key))
    if name == "get":
        return _dump(await store.aget_messages(key))
    raise AssertionError(name)


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_differential_against_simple_chat_store(shared_hs: Hindsight, sequence: list[tuple[Any, ...]]) -> None:
    ours = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs)
    reference = SimpleChatStore()
    for step, op in enumerate(sequence):
        expected = _apply(reference, op, [])
        got = _apply(ours, op, [])
        assert got == expected, f"step {step} {op}"
        assert _state(ours) == _state(reference), f"state after step {step} {op}"
        assert ours.get_keys() == reference.get_keys()
        assert all(isinstance(k, str) for k in ours.get_keys())


@pytest.mark.parametrize("sequence", SEQUENCES)
async def test_differential_async(shared_hs: Hindsight, sequence: list[tuple[Any, ...]]) -> None:
    ours = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs)
    reference = SimpleChatStore()
    for step, op in enumerate(sequence):
        expected = await _aapply(reference, op)
        assert await _aapply(ours, op) == expected, f"step {step} {op}"
        assert await ours.aget_keys() == await reference.aget_keys()
    assert _state(ours) == _state(reference)


def test_out_of_range_and_empty_lists_return_none_where_simple_store_raises(shared_hs: Hindsight) -> None:
    ours = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs)
    ours.set_messages("k", [_msg(1)])
    assert ours.delete_message("k", -2) is None
    assert ours.delete_message("k", 1) is None
    assert _dump(ours.delete_last_message("k")) == _dump(_msg(1))
    assert ours.delete_last_message("k") is None  # SimpleChatStore raises IndexError here
    assert ours.get_keys() == ["k"] and ours.get_messages("k") == []
    assert ours.delete_messages("missing") is None and ours.get_messages("missing") == []


def test_full_message_round_trip(shared_hs: Hindsight) -> None:
    ours = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs)
    tool_call = ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "里斯本"}'},
                }
            ],
            "nested": {"n": [1, 2.5, None, True]},
        },
    )
    tool_result = ChatMessage(
        role=MessageRole.TOOL,
        content="晴，24°C",
        additional_kwargs={"tool_call_id": "call_1", "name": "get_weather"},
    )
    multimodal = ChatMessage(
        role=MessageRole.USER,
        blocks=[
            TextBlock(text="what is in this picture?"),
            ImageBlock(image=b"\x89PNG fake bytes", image_mimetype="image/png"),
        ],
    )
    system = ChatMessage(role=MessageRole.SYSTEM, content="You are terse.")
    messages = [system, multimodal, tool_call, tool_result]
    for m in messages:
        ours.add_message("s", m)
    back = ours.get_messages("s")
    assert [m.role for m in back] == [m.role for m in messages]
    assert _dump(back) == _dump(messages)
    assert back[2].additional_kwargs == tool_call.additional_kwargs
    assert back[3].additional_kwargs["tool_call_id"] == "call_1"
    assert isinstance(back[1].blocks[1], ImageBlock)


def test_durable_across_processes_and_recorded_as_episodes(fresh_path: Path, embedder: E5Embedder) -> None:
    ns = "user:durable"
    with Hindsight(fresh_path, embedder=embedder) as hs:
        store = HindsightChatStore.from_defaults(namespace=ns, engine=hs)
        store.add_message("chat-1", ChatMessage(role="user", content="I am allergic to peanuts"))
        store.add_message("chat-1", ChatMessage(role="system", content="Be careful with food."))
        store.add_message("chat-1", ChatMessage(role="assistant", content="Noted, no peanuts."))
        store.delete_message("chat-1", 2)
    with Hindsight(fresh_path, embedder=embedder) as hs:
        store = HindsightChatStore.from_defaults(namespace=ns, engine=hs)
        assert [m.content for m in store.get_messages("chat-1")] == [
            "I am allergic to peanuts",
            "Be careful with food.",
        ]
        episodes = hs.working(ns, "chat-1")
        # System prompts are not episodes; a message deleted from the list stays remembered.
        assert [(e.role, e.content) for e in episodes] == [
            ("user", "I am allergic to peanuts"),
            ("assistant", "Noted, no peanuts."),
        ]
        assert episodes[0].metadata["chat_store_key"] == "chat-1"
        # Setting a list that repeats stored messages records only the new tail.
        store.set_messages(
            "chat-1",
            [*store.get_messages("chat-1"), ChatMessage(role="user", content="My budget is 3000 euros")],
        )
        assert [e.content for e in hs.working(ns, "chat-1")][-1] == "My budget is 3000 euros"
        assert len(hs.working(ns, "chat-1")) == 3


def test_works_inside_chat_memory_buffer(shared_hs: Hindsight) -> None:
    store = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs)
    memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="user-7", token_limit=40)
    for i in range(6):
        memory.put(_msg(i, "user" if i % 2 == 0 else "assistant"))
    assert len(store.get_messages("user-7")) == 6
    window = memory.get()
    assert 0 < len(window) < 6 and window[-1].content == _msg(5).content
    restored = ChatMemoryBuffer.from_dict(memory.to_dict())
    assert isinstance(restored.chat_store, HindsightChatStore)
    assert [m.content for m in restored.get_all()] == [_msg(i).content for i in range(6)]
    memory.reset()
    assert store.get_messages("user-7") == [] and "user-7" not in store.get_keys()


def test_bad_keys_and_namespaces_raise_and_change_nothing(shared_hs: Hindsight) -> None:
    store = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs)
    with pytest.raises(InvalidInputError):
        store.add_message("", _msg(1))
    with pytest.raises(InvalidInputError):
        store.set_messages("k" * 201, [_msg(1)])
    with pytest.raises(InvalidInputError):
        store.add_message("k", "not a ChatMessage")  # type: ignore[arg-type]
    assert store.get_keys() == []
    with pytest.raises(InvalidInputError):
        HindsightChatStore.from_defaults(namespace="not a namespace", engine=shared_hs)


def test_namespaces_are_walls(shared_hs: Hindsight) -> None:
    a = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs)
    b = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs)
    a.add_message("same-key", _msg(1))
    assert b.get_messages("same-key") == [] and b.get_keys() == []


def test_concurrent_appends_lose_nothing(shared_hs: Hindsight) -> None:
    from concurrent.futures import ThreadPoolExecutor

    store = HindsightChatStore.from_defaults(namespace=_ns(), engine=shared_hs, record_episodes=False)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda i: store.add_message("k", _msg(i)), range(24)))
    contents = [m.content for m in store.get_messages("k")]
    assert sorted(contents) == sorted(_msg(i).content for i in range(24))
