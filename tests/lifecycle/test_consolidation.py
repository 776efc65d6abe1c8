"""Consolidation with the rule extractor: citations, duplicates, conflicts, accumulation, weights."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from hindsight_core import EdgeKind, Hindsight, HindsightConfig, InvalidInputError, Layer, Status
from hindsight_core.lifecycle.config import LifecycleConfig


def _semantic(hs: Hindsight, namespace: str) -> list:
    return hs.store.select("namespace = ? AND layer = ?", (namespace, Layer.SEMANTIC.value))


def test_new_value_supersedes_old_and_takes_its_stale_episodes_along(engine: Hindsight, clock) -> None:
    old_user = engine.record("我们这个项目的预算上限是3万元。", "user:liu", session_id="s1", source_id="D1:1")
    old_bot = engine.record("明白，预算上限3万元。", "user:liu", session_id="s1", role="assistant")
    clock.advance(days=19)
    new_user = engine.record("跟你说一下，预算调整了，上限改成5万元。", "user:liu", session_id="s2", source_id="D2:1")
    report = engine.consolidate("user:liu")

    assert (report.status, report.created, report.superseded, report.episodes_superseded) == ("done", 2, 1, 2)
    facts = {m.content: m for m in _semantic(engine, "user:liu")}
    old, new = facts["用户的预算上限是3万元"], facts["用户的预算上限是5万元"]
    assert old.status == Status.SUPERSEDED and old.superseded_by == new.id
    assert new.status == Status.ACTIVE
    # the semantic memory cites the episodes' ids and their own source ids (e.g. LoCoMo dia_ids)
    assert set(old.source_ids) == {old_user.id, old_bot.id}
    assert set(new.source_ids) == {new_user.id}
    assert [(e.dst, e.kind) for e in engine.store.edges(new.id, kind=EdgeKind.SUPERSEDES)] == [
        (old.id, EdgeKind.SUPERSEDES)
    ]
    assert {e.dst for e in engine.store.edges(new.id, kind=EdgeKind.DERIVED_FROM)} == {new_user.id}
    for episode_id in (old_user.id, old_bot.id):
        episode = engine.get(episode_id)
        assert episode is not None
        assert episode.status == Status.SUPERSEDED and episode.superseded_by == new.id
    # out of the indexes: neither the old fact nor its episodes can be found by vector search any more
    held = engine.vectors.ids("user:liu", Layer.SEMANTIC.value) | engine.vectors.ids("user:liu", Layer.EPISODIC.value)
    assert old.id not in held and old_user.id not in held and new.id in held


def test_superseded_memory_loses_seventy_percent_of_its_activation(
    make_engine: Callable[..., Hindsight], clock
) -> None:
    config = HindsightConfig(lifecycle=LifecycleConfig(reinforce_weight=0.0))
    hs = make_engine(config)
    hs.record("I live in Hangzhou, near the West Lake.", "user:amy", session_id="s1")
    hs.consolidate("user:amy")
    before = _semantic(hs, "user:amy")[0]
    clock.advance(days=30)
    hs.record("Big news: we just moved to Shanghai last weekend.", "user:amy", session_id="s2")
    hs.consolidate("user:amy")
    after = hs.get(before.id)
    assert after is not None and after.status == Status.SUPERSEDED
    assert after.activation.ref_time == before.activation.ref_time
    assert math.isclose(after.activation.log_base - before.activation.log_base, math.log(0.3), abs_tol=1e-9)


def test_repeated_fact_is_reinforced_not_duplicated(engine: Hindsight, clock) -> None:
    first = engine.record("Just so you know, I'm allergic to shellfish.", "user:tom", session_id="s1")
    engine.consolidate("user:tom")
    (fact,) = _semantic(engine, "user:tom")
    clock.advance(days=3)
    again = engine.record("Reminder: I'm allergic to shellfish!", "user:tom", session_id="s2")
    report = engine.consolidate("user:tom")
    assert (report.created, report.merged) == (0, 1)
    (merged,) = _semantic(engine, "user:tom")
    assert merged.id == fact.id and merged.source_ids == [first.id, again.id]
    assert merged.metadata["mentions"] == 2
    now = clock().timestamp()
    rate = engine.config.activation.rate(Layer.SEMANTIC)
    assert merged.activation.log_at(now, rate) > fact.activation.log_at(now, rate)


def test_preferences_accumulate_but_a_reversal_supersedes(engine: Hindsight, clock) -> None:
    for i, text in enumerate(["我喜欢简约风格的界面。", "其实我也喜欢北欧风。", "颜色上我偏好暖色调。"]):
        clock.advance(days=7)
        engine.record(text, "user:zhao", session_id=f"s{i}")
    engine.consolidate("user:zhao")
    active = sorted(m.content for m in _semantic(engine, "user:zhao") if m.status == Status.ACTIVE)
    assert active == ["用户偏好暖色调", "用户喜欢北欧风", "用户喜欢简约风格的界面"]
    clock.advance(days=7)
    engine.record("我不喜欢北欧风了。", "user:zhao", session_id="s9")
    report = engine.consolidate("user:zhao")
    assert report.superseded == 1
    active = sorted(m.content for m in _semantic(engine, "user:zhao") if m.status == Status.ACTIVE)
    assert active == ["用户不喜欢北欧风", "用户偏好暖色调", "用户喜欢简约风格的界面"]


def test_explicit_migration_supersedes_the_tool_it_replaces(engine: Hindsight, clock) -> None:
    engine.record("We use MySQL for the orders service.", "team:x", session_id="s1")
    engine.record("We also use Redis as a cache.", "team:x", session_id="s1")
    clock.advance(days=10)
    engine.record("We migrated from MySQL to PostgreSQL last month.", "team:x", session_id="s2")
    engine.consolidate("team:x")
    by_content = {m.content: m for m in _semantic(engine, "team:x")}
    assert by_content["The user uses MySQL"].status == Status.SUPERSEDED
    assert by_content["The user uses Redis"].status == Status.ACTIVE
    assert by_content["The user switched to PostgreSQL"].status == Status.ACTIVE


def test_consolidated_episodes_lose_weight_and_are_not_replayed(engine: Hindsight) -> None:
    episode = engine.record("我住在杭州。", "user:w", session_id="s1")
    talk = engine.record("哈哈", "user:w", session_id="s1")
    report = engine.consolidate("user:w")
    assert report.episodes == 2
    after = engine.get(episode.id)
    assert after is not None
    factor = engine.config.lifecycle.consolidated_episode_factor
    assert math.isclose(after.activation.log_base - episode.activation.log_base, math.log(factor))
    assert engine.get(talk.id) is not None  # small talk is kept for provenance
    again = engine.consolidate("user:w")
    assert (again.status, again.episodes, again.created) == ("empty", 0, 0)
    assert engine.stats("user:w").namespaces["user:w"].consolidation_jobs["done"] == 2


def test_session_scope_and_namespace_wall(engine: Hindsight) -> None:
    engine.record("我对芒果过敏。", "user:a", session_id="s1")
    engine.record("我住在成都。", "user:a", session_id="s2")
    engine.record("我对海鲜过敏。", "user:b", session_id="s1")
    report = engine.consolidate("user:a", session_id="s1")
    assert [m.content for m in _semantic(engine, "user:a")] == ["用户对芒果过敏"]
    assert report.episodes == 1
    assert _semantic(engine, "user:b") == []
    engine.consolidate("user:a")
    assert sorted(m.content for m in _semantic(engine, "user:a")) == ["用户住在成都", "用户对芒果过敏"]
    assert _semantic(engine, "user:b") == []


def test_bad_input_raises_and_changes_nothing(engine: Hindsight) -> None:
    engine.record("我住在成都。", "user:a", session_id="s1")
    with pytest.raises(InvalidInputError):
        engine.consolidate("bad namespace")
    with pytest.raises(InvalidInputError):
        engine.consolidate("user:a", session_id="")  # type: ignore[arg-type]
    assert _semantic(engine, "user:a") == []
    assert engine.consolidate("user:nobody").status == "empty"


async def test_async_twin(engine: Hindsight) -> None:
    await engine.arecord("I prefer window seats.", "user:async", session_id="s1")
    report = await engine.aconsolidate("user:async")
    assert report.created == 1
