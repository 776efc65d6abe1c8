"""HindsightStore namespace labels: encoding is unambiguous, decoding is total, and an engine namespace
under the store's root that the store did not write never breaks ``search`` or ``list_namespaces``."""

from __future__ import annotations

import uuid

import pytest

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import HindsightStore
from hindsight_langchain.store import _decode_label, _encode_label


@pytest.fixture
def store(hs: Hindsight) -> HindsightStore:
    return HindsightStore(hs, root=f"t{uuid.uuid4().hex[:10]}")


@pytest.mark.parametrize("foreign", ["x=FF", "x=E4=B8", "x=41", "x=3d", "ok/x=C3=28", "a=3D=FF"])
def test_foreign_namespaces_do_not_break_reads(store: HindsightStore, hs: Hindsight, foreign: str) -> None:
    store.put(("docs", "u1"), "a", {"text": "User is allergic to peanuts"})
    hs.record("written by something else", namespace=f"{store.root}:{foreign}")
    assert store.list_namespaces() == [("docs", "u1")]
    assert [i.key for i in store.search(())] == ["a"]
    assert [i.key for i in store.search((), query="peanuts")] == ["a"]


@pytest.mark.parametrize("label", ["plain", "a=b", "=FF", "a=3Db", "用户", "a b/c", "x=E4", "-_-", "🙂"])
def test_labels_round_trip_and_look_like_no_other(store: HindsightStore, label: str) -> None:
    assert _decode_label(_encode_label(label)) == label
    store.put((label, "n"), "k", {"v": label})
    assert store.get((label, "n"), "k").value == {"v": label}  # type: ignore[union-attr]
    assert store.list_namespaces() == [(label, "n")]


def test_labels_that_are_not_unicode_are_refused(store: HindsightStore) -> None:
    with pytest.raises(InvalidInputError, match="namespace label"):
        store.put(("bad\udc80",), "k", {"v": 1})
    with pytest.raises(InvalidInputError, match="namespace label"):
        store.get(("bad\udc80",), "k")
    assert store.list_namespaces() == []
