"""``hindsight import`` of the three foreign formats (idempotent) and export → import round trips."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight

NS = "user:liu"


def test_jsonl_events_import_is_idempotent(cli: Callable[..., Any], tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(
        "\n".join([
            json.dumps({"content": "I am allergic to peanuts", "session_id": "s1", "importance": 5}),
            json.dumps({"content": "I moved to Berlin", "session_id": "s1", "source_id": "mine-2"}),
            "",
            json.dumps("My sister is called Anna"),
        ]),
        encoding="utf-8",
    )
    first = cli("import", str(events), "--namespace", "u1", "--json").json()
    assert first == {"format": "events", "namespace": "u1", "events": 3, "memories": 3, "skipped": 0}
    again = cli("import", str(events), "-n", "u1", "--json").json()
    assert (again["memories"], again["skipped"]) == (0, 3)
    rows = cli("ls", "u1", "--json").json()
    assert [r["content"] for r in rows] == ["I am allergic to peanuts", "I moved to Berlin", "My sister is called Anna"]
    assert rows[0]["importance"] == 5 and rows[1]["source_id"] == "mine-2"
    # a second, different file at the same positions is not mistaken for the first
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"content": "I play the cello"}) + "\n", encoding="utf-8")
    assert cli("import", str(other), "-n", "u1", "--json").json()["memories"] == 1
    # bad input changes nothing
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"content": "fine"}\n{"content": 3}\n', encoding="utf-8")
    result = cli("import", str(broken), "-n", "u1")
    assert result.exit_code == 2 and "event 1" in result.stderr
    assert len(cli("ls", "u1", "--json").json()) == 4
    assert cli("import", str(events)).exit_code == 2  # events need a namespace
    assert cli("import", str(tmp_path / "absent.jsonl"), "-n", "u1").exit_code == 2


def test_langchain_message_history_import(cli: Callable[..., Any], tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, messages_to_dict

    history = [
        SystemMessage("You are a helpful assistant."),
        HumanMessage("I am vegetarian and I live in Porto."),
        AIMessage("Noted: vegetarian, Porto."),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "t1"}]),
        HumanMessage([{"type": "text", "text": "My daughter is called Inês."}]),
    ]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(messages_to_dict(history)), encoding="utf-8")
    report = cli("import", str(path), "-n", "u1", "--session", "chat-7", "--json").json()
    assert report["format"] == "langchain" and report["memories"] == 4  # the tool-call-only message has no text
    rows = cli("ls", "u1", "--json").json()
    assert [(r["role"], r["content"]) for r in rows] == [
        ("system", "You are a helpful assistant."),
        ("user", "I am vegetarian and I live in Porto."),
        ("assistant", "Noted: vegetarian, Porto."),
        ("user", "My daughter is called Inês."),
    ]
    assert {r["session_id"] for r in rows} == {"chat-7"}
    assert cli("import", str(path), "-n", "u1", "--session", "chat-7", "--json").json()["memories"] == 0
    assert cli("import", str(path), "-n", "u1", "--format", "llamaindex").exit_code == 2


def _persist_simple_chat_store(path: Path) -> Any:
    """A LlamaIndex ``SimpleChatStore`` file. ``persist()`` is what users run; with llama-index-core 0.14
    under pydantic >= 2.12 its serializer fails (the wrap serializer passes ``info`` where pydantic now
    expects an index key), so the file is then written the way ``persist`` writes it (the store's JSON)
    from each message's own JSON, and read back with ``from_persist_path`` to prove LlamaIndex reads it."""
    from llama_index.core.llms import ChatMessage
    from llama_index.core.storage.chat_store import SimpleChatStore
    from pydantic_core import PydanticSerializationError

    store = SimpleChatStore()
    store.set_messages("alice", [
        ChatMessage(role="user", content="I prefer window seats on flights."),
        ChatMessage(role="assistant", content="Window seats it is."),
    ])
    store.add_message("bob", ChatMessage(role="user", content="Remind me that my passport expires in May."))
    try:
        store.persist(str(path))
    except PydanticSerializationError:
        messages = {k: [json.loads(m.model_dump_json()) for m in store.get_messages(k)] for k in store.get_keys()}
        data = {"store": messages, "class_name": "SimpleChatStore"}
        path.write_text(json.dumps(data), encoding="utf-8")
    loaded = SimpleChatStore.from_persist_path(str(path))
    assert {k: [m.content for m in loaded.get_messages(k)] for k in loaded.get_keys()} == {
        k: [m.content for m in store.get_messages(k)] for k in store.get_keys()
    }
    return store


def test_llamaindex_simple_chat_store_import(cli: Callable[..., Any], tmp_path: Path) -> None:
    path = tmp_path / "chat_store.json"
    _persist_simple_chat_store(path)
    report = cli("import", str(path), "-n", "u1", "--json").json()
    assert report["format"] == "llamaindex" and report["memories"] == 3
    rows = cli("ls", "u1", "--json").json()
    assert [(r["session_id"], r["role"], r["content"]) for r in rows] == [
        ("alice", "user", "I prefer window seats on flights."),
        ("alice", "assistant", "Window seats it is."),
        ("bob", "user", "Remind me that my passport expires in May."),
    ]
    assert cli("import", str(path), "-n", "u1", "--json").json()["skipped"] == 3
    assert len(cli("ls", "u1", "--json").json()) == 3


def _snapshot(hs: Hindsight, namespace: str) -> dict[str, Any]:
    memories = hs.find(namespace)
    return {
        "memories": [m.model_dump() for m in memories],
        "edges": sorted(
            (e.src, e.dst, e.kind.value, e.created_at) for m in memories for e in hs.store.edges(m.id, direction="out")
        ),
        "transcripts": {k: hs.transcript(namespace, k) for k in hs.transcript_keys(namespace)},
        "consolidated": hs.store.consolidated_of(namespace),
        "vectors": {layer: hs.vectors.ids(namespace, layer) for layer in ("episodic", "semantic", "procedural")},
    }


def test_export_then_import_elsewhere_round_trips_exactly(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, tmp_path: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    hs.record("我们这个项目的预算上限是3万元。", NS, session_id="s1", source_id="D1:1", metadata={"channel": "slack"})
    hs.record("明白，预算上限3万元。", NS, session_id="s1", role="assistant")
    clock.advance(days=19)
    hs.record("跟你说一下，预算调整了，上限改成5万元。", NS, session_id="s2", source_id="D2:1")
    hs.record("ok", NS, session_id="s2")  # small talk: stored, not indexed
    hs.consolidate(NS)
    hs.add_procedure("deploy the site", ["run tests", "push"], NS)
    hs.add_procedure("deploy the site", ["run tests", "tag", "push"], NS)
    hs.edit_transcript(NS, "chat-1", lambda _: [{"role": "user", "content": "hi"}, {"role": "ai", "content": "yo"}])
    hs.recall("预算上限是多少？", NS)  # reinforcement changes activation and access counts
    hs.flush_recall_log()
    clock.advance(days=40)
    hs.sweep()  # some episodes go cold
    hs.grant("kb:budget-rules", to=NS)
    before = _snapshot(hs, NS)
    grants = hs.grants(NS)
    assert {m["status"].value for m in before["memories"]} >= {"active", "superseded", "cold"}
    hs.close()

    export = tmp_path / "liu.jsonl"
    assert cli("export", NS, "-o", str(export)).exit_code == 0
    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["namespace"] == NS and lines[0]["version"] == 2
    assert {r["type"] for r in lines} == {"header", "memory", "edge", "transcript", "consolidated", "grant"}
    assert cli("export", NS).stdout == export.read_text(encoding="utf-8")  # stdout gives the same records

    fresh = tmp_path / "fresh"
    report = cli("import", str(export), "--json", path=fresh).json()
    assert report["format"] == "export" and report["memories"] == len(before["memories"]) and report["skipped"] == 0
    assert (report["transcripts"], report["grants"]) == (1, 1)
    again = cli("import", str(export), "--json", path=fresh).json()
    assert (again["memories"], again["skipped"], again["transcripts"]) == (0, len(before["memories"]), 0)
    assert (again["grants"], again["skipped_grants"]) == (0, 1)

    hs2 = open_engine(fresh)
    after = _snapshot(hs2, NS)
    assert len(after["memories"]) == len(before["memories"])
    for old, new in zip(before["memories"], after["memories"], strict=True):
        for field, value in old.items():
            assert new[field] == value, (old["id"], field)
    for key in ("edges", "transcripts", "consolidated", "vectors"):
        assert after[key] == before[key], key
    assert hs2.grants() == grants
    # the rebuilt namespace recalls like the original and has nothing left to consolidate
    assert hs2.recall("预算上限是多少？", NS).hits[0].memory.content == "用户的预算上限是5万元"
    assert hs2.consolidate(NS).status == "empty"
    hs2.close()
    # an export into a data set that holds those ids in another namespace is refused, changing nothing
    renamed = cli("import", str(export), "-n", "user:copy", path=fresh)
    assert renamed.exit_code == 2 and "another namespace" in renamed.stderr
    assert [r["namespace"] for r in cli("namespaces", "--json", path=fresh).json()] == [NS]
    assert cli("export", "user:nobody").exit_code == 1


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000 + "\n",  # one JSON document (the LangChain shape is a list)
    '{"content": "hi"}\n' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "\n",  # a JSONL line
])
def test_input_nested_absurdly_deep_exits_2_with_a_message(cli: Callable[..., Any], tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(text, encoding="utf-8")
    result = cli("import", str(path), "--namespace", "user:deep")
    assert result.exit_code == 2, result.stdout
    assert "nested too deep" in result.stdout + result.stderr
    assert "user:deep" not in cli("ls", "--json").stdout  # nothing was imported
