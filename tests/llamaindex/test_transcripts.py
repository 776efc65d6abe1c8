"""The engine's transcript API: the exact, durable key -> ordered list that chat stores are built on."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_core import Hindsight, InvalidInputError
from hindsight_core.embeddings.e5 import E5Embedder


def test_missing_empty_and_ordered(engine: Hindsight) -> None:
    assert engine.transcript("user:1", "chat") is None
    assert engine.edit_transcript("user:1", "chat", lambda cur: [] if cur is None else cur) == []
    assert engine.transcript("user:1", "chat") == []  # an existing key may hold nothing
    for i in range(3):
        engine.edit_transcript("user:1", "chat", lambda cur, i=i: [*(cur or []), {"i": i, "text": f"第{i}条"}])
    assert engine.transcript("user:1", "chat") == [
        {"i": 0, "text": "第0条"},
        {"i": 1, "text": "第1条"},
        {"i": 2, "text": "第2条"},
    ]
    engine.edit_transcript("user:1", "chat", lambda cur: [e for e in cur or [] if e["i"] != 1])
    assert [e["i"] for e in engine.transcript("user:1", "chat") or []] == [0, 2]
    engine.edit_transcript("user:1", "other", lambda cur: [1])
    engine.edit_transcript("user:1", "chat", lambda cur: None)
    assert engine.transcript("user:1", "chat") is None
    engine.edit_transcript("user:1", "chat", lambda cur: ["again"])
    assert engine.transcript_keys("user:1") == ["other", "chat"]  # re-created keys go last


def test_namespaces_are_walls_and_forget_namespace_clears(engine: Hindsight) -> None:
    engine.record("I live in Lyon", "user:a")
    engine.edit_transcript("user:a", "s", lambda cur: ["secret of a"])
    assert engine.transcript("user:b", "s") is None
    assert engine.transcript_keys("user:b") == []
    engine.forget_namespace("user:a")
    assert engine.transcript("user:a", "s") is None
    assert engine.transcript_keys("user:a") == []


def test_bad_input_changes_nothing(engine: Hindsight) -> None:
    engine.edit_transcript("user:1", "k", lambda cur: [1, 2])
    with pytest.raises(InvalidInputError):
        engine.edit_transcript("user:1", "k", lambda cur: [*(cur or []), {"x": object()}])
    with pytest.raises(InvalidInputError):
        engine.edit_transcript("user:1", "k", lambda cur: "not a list")  # type: ignore[arg-type,return-value]
    with pytest.raises(InvalidInputError):
        engine.edit_transcript("bad namespace", "k", lambda cur: [])
    with pytest.raises(InvalidInputError):
        engine.transcript("user:1", "   ")

    def boom(cur: list[object] | None) -> list[object]:
        raise RuntimeError("edit failed")

    with pytest.raises(RuntimeError):
        engine.edit_transcript("user:1", "k", boom)
    assert engine.transcript("user:1", "k") == [1, 2]


def test_in_place_mutation_of_the_current_list_is_written(engine: Hindsight) -> None:
    engine.edit_transcript("user:1", "k", lambda cur: [{"v": 1}, {"v": 2}])

    def mutate(cur: list[dict[str, int]] | None) -> list[dict[str, int]]:
        assert cur is not None
        cur[0]["v"] = 10
        return cur

    engine.edit_transcript("user:1", "k", mutate)  # type: ignore[arg-type]
    assert engine.transcript("user:1", "k") == [{"v": 10}, {"v": 2}]


def test_durable_across_reopen(tmp_path: Path, embedder: E5Embedder) -> None:
    with Hindsight(tmp_path / "d", embedder=embedder) as hs:
        hs.edit_transcript("user:1", "k", lambda cur: [{"role": "user", "text": "hi"}])
    with Hindsight(tmp_path / "d", embedder=embedder) as hs:
        assert hs.transcript("user:1", "k") == [{"role": "user", "text": "hi"}]


async def test_async_twins(engine: Hindsight) -> None:
    await engine.aedit_transcript("user:1", "k", lambda cur: ["a"])
    assert await engine.atranscript("user:1", "k") == ["a"]
    assert await engine.atranscript_keys("user:1") == ["k"]
