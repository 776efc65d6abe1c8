"""The two engine additions the adapters rely on: ``find`` (exact, complete reads in write order) and
``record(index=...)`` (stored but kept out of recall)."""

from __future__ import annotations

import pytest

from hindsight_core import Hindsight, InvalidInputError


def test_find_filters_by_exact_attributes_in_write_order(hs: Hindsight, ns: str) -> None:
    a = hs.record("first turn", ns, session_id="s1")
    b = hs.record("a fact", ns, layer="semantic", kind="fact", source_id="key-1")
    c = hs.record("second turn", ns, session_id="s1", role="assistant")
    hs.record("other session", ns, session_id="s2")
    hs.record("other tenant", ns + "x", session_id="s1")
    assert [m.id for m in hs.find(ns, session_id="s1")] == [a.id, c.id]
    assert [m.id for m in hs.find(ns, layer="semantic")] == [b.id]
    assert [m.id for m in hs.find(ns, source_ids=["key-1", "nope"])] == [b.id]
    assert hs.find(ns, source_ids=[]) == []
    assert [m.content for m in hs.find(ns, kind="turn", limit=2)] == ["first turn", "second turn"]
    assert len(hs.find(ns, status="active")) == 4 and hs.find(ns, status="superseded") == []
    assert hs.find(ns + "-empty") == []


async def test_afind_is_the_same_read(hs: Hindsight, ns: str) -> None:
    hs.record("one", ns, session_id="s1")
    assert [m.content for m in await hs.afind(ns, session_id="s1")] == ["one"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"layer": "nope"},
        {"kind": "nope"},
        {"status": "nope"},
        {"limit": 0},
        {"limit": True},
        {"source_ids": "key-1"},
        {"session_id": ""},
    ],
)
def test_find_refuses_bad_input(hs: Hindsight, ns: str, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        hs.find(ns, **kwargs)  # type: ignore[arg-type]


def test_find_refuses_a_malformed_namespace(hs: Hindsight) -> None:
    with pytest.raises(InvalidInputError):
        hs.find("two words")


def test_record_index_false_keeps_a_memory_out_of_recall(hs: Hindsight, ns: str) -> None:
    hidden = hs.record("The vault code is 4471", ns, index=False)
    assert not hidden.indexed and hs.get(hidden.id) == hidden
    assert hs.recall("what is the vault code 4471", ns).hits == []
    shown = hs.record("ok", ns, index=True)  # small talk, indexed on request
    assert shown.indexed and not hs.record("ok thanks", ns).indexed
    with pytest.raises(InvalidInputError):
        hs.record("x", ns, index="yes")  # type: ignore[arg-type]
