"""Bad input gets an exception naming the problem, and changes nothing."""

from __future__ import annotations

from datetime import datetime

import pytest

from hindsight_core import Hindsight, HindsightConfig, InvalidInputError
from hindsight_core.config import WriteConfig


def _snapshot(hs: Hindsight) -> tuple[int, int, int]:
    return hs.stats().total, hs.store.pending_count(), hs.vectors.count_layer("episodic")  # type: ignore[attr-defined]


BAD_RECORDS = [
    ({"content": ""}, "empty"),
    ({"content": "   \n\t"}, "empty"),
    ({"content": "x" * 2001}, "limit of 2000"),
    ({"content": "bad \udcff surrogate"}, "lone surrogate"),
    ({"content": b"\xff\xfe invalid"}, "not valid UTF-8"),
    ({"content": "nul \x00 byte"}, "NUL"),
    ({"content": 42}, "must be str"),
    ({"content": "ok text", "layer": "dream"}, "unknown layer"),
    ({"content": "ok text", "layer": "working"}, "not stored"),
    ({"content": "ok text", "kind": "gossip"}, "unknown kind"),
    ({"content": "ok text", "namespace": ""}, "namespace is empty"),
    ({"content": "ok text", "namespace": "user 1"}, "malformed"),
    ({"content": "ok text", "namespace": "user:{1}"}, "malformed"),
    ({"content": "ok text", "namespace": "a\nb"}, "malformed"),
    ({"content": "ok text", "namespace": None}, "must be a str"),
    ({"content": "ok text", "metadata": {"when": datetime.now()}}, "not JSON-serialisable"),
    ({"content": "ok text", "metadata": {"x": float("nan")}}, "not JSON-serialisable"),
    ({"content": "ok text", "metadata": ["not", "a", "dict"]}, "must be a dict"),
    ({"content": "ok text", "importance": 9}, "importance"),
    ({"content": "ok text", "occurred_at": datetime(2024, 1, 1)}, "timezone-aware"),
    ({"content": "ok text", "session_id": ""}, "session_id"),
]


@pytest.fixture
def small_engine(tmp_path, clock, embedder):
    config = HindsightConfig(write=WriteConfig(max_content_chars=2000))
    with Hindsight(tmp_path, clock=clock, embedder=embedder, config=config) as hs:
        hs.record("an existing memory", namespace="u:1")
        yield hs


@pytest.mark.parametrize(("kwargs", "message"), BAD_RECORDS, ids=[m for _, m in BAD_RECORDS])
def test_bad_record_raises_and_changes_nothing(small_engine: Hindsight, kwargs: dict, message: str) -> None:
    before = _snapshot(small_engine)
    args = {"namespace": "u:1", **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        small_engine.record(args.pop("content"), **args)
    assert _snapshot(small_engine) == before


def test_one_bad_event_rejects_the_whole_batch(small_engine: Hindsight) -> None:
    before = _snapshot(small_engine)
    with pytest.raises(InvalidInputError, match="event 2"):
        small_engine.record_many(["fine", "also fine", "", "never reached"], namespace="u:1")
    with pytest.raises(InvalidInputError, match="share a source_id"):
        small_engine.record_many([{"content": "a", "source_id": "x"}, {"content": "b", "source_id": "x"}],
                                 namespace="u:1")
    with pytest.raises(InvalidInputError, match="event 0 is malformed"):
        small_engine.record_many([{"text": "wrong field"}], namespace="u:1")
    assert _snapshot(small_engine) == before


def test_hostile_strings_are_stored_verbatim(small_engine: Hindsight) -> None:
    hostile = "'); DROP TABLE memories; -- {namespace} $where \u202e <script>alert(1)</script> ../../etc"
    mem = small_engine.record(hostile, namespace="u:1", metadata={"$ne": None, "k": "'; --"})
    assert small_engine.get(mem.id).content == hostile  # type: ignore[union-attr]
    assert small_engine.get(mem.id).metadata == {"$ne": None, "k": "'; --"}  # type: ignore[union-attr]
    assert small_engine.stats().total == 2


def test_unicode_namespaces_are_welcome(small_engine: Hindsight) -> None:
    mem = small_engine.record("你好，我叫王磊", namespace="user:王磊")
    assert small_engine.get(mem.id, namespace="user:王磊") == mem


def test_a_naive_clock_is_refused(tmp_path, embedder) -> None:
    with Hindsight(tmp_path, clock=datetime.now, embedder=embedder, reconcile_on_open=False) as hs, \
            pytest.raises(InvalidInputError, match="timezone-aware"):
        hs.record("hello there", namespace="u:1")
