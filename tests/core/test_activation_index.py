"""One suite, run against both activation index implementations (embedded SQLite and a real Redis)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.crc import key_slot

from hindsight_core.activation.base import ActivationIndex, activation_key, log_activation_from_key
from hindsight_core.activation.redis import RedisActivationIndex
from hindsight_core.activation.sqlite import SqliteActivationIndex
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Activation


@pytest.fixture(params=["sqlite", "redis"])
def index(request, tmp_path) -> Iterator[ActivationIndex]:
    if request.param == "sqlite":
        store = RelationalStore(tmp_path / "a.sqlite3")
        yield SqliteActivationIndex(store)
        store.close()
    else:
        client = request.getfixturevalue("redis_client")
        yield RedisActivationIndex(client, prefix=request.getfixturevalue("redis_prefix"))


def test_upsert_top_and_scores(index: ActivationIndex) -> None:
    index.upsert("u:1", "episodic", [("a", 1.0), ("b", 3.0), ("c", 2.0)])
    assert index.top("u:1", "episodic", 2) == [("b", 3.0), ("c", 2.0)]
    index.upsert("u:1", "episodic", [("a", 5.0)])  # upsert rewrites one key
    assert index.top("u:1", "episodic", 10) == [("a", 5.0), ("b", 3.0), ("c", 2.0)]
    assert index.scores("u:1", "episodic", ["a", "zz"]) == {"a": 5.0}
    assert index.count("u:1", "episodic") == 3


def test_namespaces_and_layers_are_separate(index: ActivationIndex) -> None:
    index.upsert("u:1", "episodic", [("a", 1.0)])
    index.upsert("u:2", "episodic", [("b", 2.0)])
    index.upsert("u:1", "semantic", [("c", 3.0)])
    assert index.top("u:1", "episodic", 10) == [("a", 1.0)]
    assert index.top("u:2", "episodic", 10) == [("b", 2.0)]
    assert index.scores("u:2", "episodic", ["a"]) == {}
    index.drop_namespace("u:1", ["episodic", "semantic"])
    assert index.count("u:1", "episodic") == index.count("u:1", "semantic") == 0
    assert index.count("u:2", "episodic") == 1


def test_delete_is_idempotent(index: ActivationIndex) -> None:
    index.upsert("u:1", "episodic", [("a", 1.0), ("b", 2.0)])
    index.delete("u:1", "episodic", ["a", "missing"])
    index.delete("u:1", "episodic", ["a"])
    assert index.top("u:1", "episodic", 10) == [("b", 2.0)]
    assert index.ping()


def test_ids_are_every_member_of_one_namespace_and_layer(index: ActivationIndex) -> None:
    index.upsert("u:1", "episodic", [(f"m{i}", float(i)) for i in range(50)])
    index.upsert("u:1", "semantic", [("s", 1.0)])
    index.upsert("u:2", "episodic", [("other", 1.0)])
    assert index.ids("u:1", "episodic") == {f"m{i}" for i in range(50)}
    assert index.ids("u:1", "semantic") == {"s"} and index.ids("u:2", "episodic") == {"other"}
    assert index.ids("u:3", "episodic") == set()
    index.delete("u:1", "episodic", ["m0"])
    assert "m0" not in index.ids("u:1", "episodic")


def test_redis_keys_are_hash_tagged_by_namespace(redis_client, redis_prefix) -> None:
    index = RedisActivationIndex(redis_client, prefix=redis_prefix)
    index.upsert("agent:a/user:1", "semantic", [("m", 1.0)])
    key = index.key("agent:a/user:1", "semantic")
    assert key == f"{redis_prefix}:{{agent:a/user:1}}:act:semantic"
    slots = {key_slot(index.key("agent:a/user:1", layer).encode()) for layer in ("episodic", "semantic")}
    assert len(slots) == 1, "all keys of one namespace must share a cluster slot"
    assert redis_client.zscore(key, "m") == 1.0


RATE = math.log(2) / (7 * 86_400)
times = st.floats(min_value=1.6e9, max_value=2.2e9)
logs = st.floats(min_value=-20, max_value=20)


@given(a=st.tuples(logs, times), b=st.tuples(logs, times), now=times)
def test_ordering_by_key_equals_ordering_by_activation_at_any_time(a, b, now) -> None:
    act_a, act_b = Activation(log_base=a[0], ref_time=a[1]), Activation(log_base=b[0], ref_time=b[1])
    ka, kb = activation_key(act_a, RATE), activation_key(act_b, RATE)
    la, lb = act_a.log_at(now, RATE), act_b.log_at(now, RATE)
    if abs(la - lb) > 1e-6:
        assert (ka > kb) == (la > lb)
    assert log_activation_from_key(ka, RATE, now) == pytest.approx(la, abs=1e-6)
