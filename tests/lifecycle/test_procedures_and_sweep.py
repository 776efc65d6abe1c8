"""Procedures and feedback; decay to cold, the JSONL archive, restore, state TTL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight_core import Hindsight, InvalidInputError, Kind, Layer, MemoryNotFoundError, Status


def test_procedure_content_metadata_and_versions(engine: Hindsight) -> None:
    p = engine.add_procedure("用户申请退款", ["核对订单号", "核对支付渠道", "核对金额"], "agent:support")
    assert (p.layer, p.kind) == (Layer.PROCEDURAL, Kind.PROCEDURE)
    assert p.content == "用户申请退款 → 1. 核对订单号 2. 核对支付渠道 3. 核对金额"
    assert p.metadata["trigger"] == "用户申请退款" and p.metadata["confidence"] == 0.5
    assert p.id in engine.vectors.ids("agent:support", Layer.PROCEDURAL.value)
    same = engine.add_procedure("用户申请退款", ["核对订单号", "核对支付渠道", "核对金额"], "agent:support")
    assert same.id == p.id
    v2 = engine.add_procedure("用户申请退款", ["核对订单号", "核对金额"], "agent:support")
    old = engine.get(p.id)
    assert old is not None and old.status == Status.SUPERSEDED and old.superseded_by == v2.id
    with pytest.raises(InvalidInputError):
        engine.add_procedure("x", [], "agent:support")
    with pytest.raises(InvalidInputError):
        engine.add_procedure("x", "not a list", "agent:support")  # type: ignore[arg-type]
    assert len(engine.store.select("layer = 'procedural'")) == 2


def test_feedback_moves_confidence_and_retires_a_failing_procedure(engine: Hindsight) -> None:
    p = engine.add_procedure("deploy fails", ["roll back", "page on-call"], "team:ops")
    up = engine.feedback(p.id, True)
    assert up.metadata["confidence"] == pytest.approx(0.6)
    assert up.activation.log_base > p.activation.log_base
    down = up
    for _ in range(7):
        down = engine.feedback(p.id, False)
    assert down.metadata["confidence"] < engine.config.lifecycle.procedure_min_confidence
    assert down.status == Status.COLD and p.id not in engine.vectors.ids("team:ops", Layer.PROCEDURAL.value)
    fact = engine.record("I live in Paris.", "team:ops")
    with pytest.raises(InvalidInputError):
        engine.feedback(fact.id, True)
    with pytest.raises(InvalidInputError):
        engine.feedback(p.id, "yes")  # type: ignore[arg-type]
    with pytest.raises(MemoryNotFoundError):
        engine.feedback("01ARZ3NDEKTSV4RRFFQ69G5FAV", True)


def test_idle_memories_go_cold_then_to_the_archive_and_come_back(engine: Hindsight, clock) -> None:
    kept = engine.add_procedure("deploy fails", ["roll back"], "user:s")
    idle = engine.record("We talked about the weather in Oslo.", "user:s", session_id="s1", source_id="D1:1")
    other = engine.record("Something in another namespace.", "user:t", session_id="s1")
    clock.advance(days=20)
    assert engine.sweep().cooled == 0  # faded a little, not idle long enough
    clock.advance(days=20)
    engine.feedback(kept.id, True)  # used: reinforced
    report = engine.sweep()
    assert set(report.cooled_ids) == {idle.id, other.id}
    cold = engine.get(idle.id)
    assert cold is not None and cold.status == Status.COLD
    assert idle.id not in engine.vectors.ids("user:s", Layer.EPISODIC.value)
    assert engine.stats("user:s").namespaces["user:s"].layers["episodic"].by_status == {"cold": 1}

    clock.advance(days=60)
    report = engine.sweep(namespace="user:s")
    assert report.archived_ids == [idle.id]
    assert engine.get(idle.id) is None
    path = Path(report.archives["user:s"])
    assert path == engine.archive_path("user:s") and path.parent == engine.path / "archive"
    (line,) = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert line["memory"]["content"] == "We talked about the weather in Oslo." and line["external_id"] == "D1:1"
    assert engine.get(other.id) is not None  # the other namespace was not swept this time
    assert engine.get(kept.id) is not None and engine.get(kept.id).status == Status.ACTIVE  # type: ignore[union-attr]

    assert engine.restore(path).restored == 1
    back = engine.get(idle.id)
    assert back is not None and back.status == Status.ACTIVE and back.source_id == "D1:1"
    assert idle.id in engine.vectors.ids("user:s", Layer.EPISODIC.value)
    assert engine.record("again", "user:s", source_id="D1:1").id == idle.id  # idempotency key came back too
    assert engine.restore(path).restored == 0


def test_state_memories_expire(engine: Hindsight, clock) -> None:
    engine.record("我最近在学游泳。", "user:st", session_id="s1")
    engine.consolidate("user:st")
    (state,) = engine.store.select("namespace = ? AND kind = 'state'", ("user:st",))
    assert state.expires_at is not None
    clock.advance(days=engine.config.lifecycle.state_ttl_days + 1)
    report = engine.sweep()
    assert report.expired == 1
    expired = engine.get(state.id)
    assert expired is not None and expired.status == Status.COLD


def test_malformed_archive_restores_nothing(engine: Hindsight, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        engine.restore(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    good = {
        "format": "hindsight-archive/1",
        "external_id": None,
        "edges": [],
        "memory": {
            "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "namespace": "user:x",
            "content": "hi",
            "occurred_at": "2026-01-01T00:00:00Z",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
        },
    }
    bad.write_text("{not json\n" + json.dumps({**good, "format": "other/1"}) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError):
        engine.restore(bad)  # no whole record at all: not an archive
    assert engine.get("01ARZ3NDEKTSV4RRFFQ69G5FAV") is None


def test_forget_namespace_removes_jobs_and_archive(engine: Hindsight, clock) -> None:
    engine.record("We decided to go with the blue tiles for the bathroom.", "user:f")
    engine.consolidate("user:f")
    clock.advance(days=200)
    engine.record("fresh", "user:g")
    engine.sweep()
    engine.sweep()
    assert engine.archive_path("user:f").exists()
    engine.record("We decided on green tiles after all.", "user:f")
    engine.forget_namespace("user:f")
    assert not engine.archive_path("user:f").exists()
    assert engine.store.query("SELECT COUNT(*) FROM consolidation_jobs WHERE namespace = 'user:f'")[0][0] == 0


async def test_async_twins_sweep_restore_and_feedback(engine: Hindsight, clock) -> None:
    procedure = await engine.aadd_procedure("backup fails", ["check disk", "retry"], "user:as")
    assert (await engine.afeedback(procedure.id, True)).metadata["confidence"] > 0.5
    episode = await engine.arecord("an idle note", "user:as")
    clock.advance(days=200)
    report = await engine.asweep()
    assert report.archived_ids == [episode.id]
    assert (await engine.arestore(report.archives["user:as"])).restored == 1


def test_forget_namespace_reaches_a_namespace_that_lives_only_in_the_archive(engine: Hindsight, clock) -> None:
    engine.record("Yesterday I left my spare key under the blue flowerpot.", "user:gone")
    clock.advance(days=200)
    engine.record("fresh", "user:other")
    engine.sweep()
    engine.sweep()
    assert engine.archive_path("user:gone").exists()
    assert engine.find("user:gone") == []  # nothing left in the store: only the archive holds it
    assert engine.forget_namespace("user:gone") == 0
    assert not engine.archive_path("user:gone").exists()


def test_pinned_memories_never_fade_out(engine: Hindsight, clock) -> None:
    pinned = engine.record("Office wifi password is on the fridge.", "user:p", layer="semantic", kind="fact",
                           metadata={"pinned": True})
    loose = engine.record("The hallway light flickers.", "user:p", layer="semantic", kind="fact")
    for _ in range(4):
        clock.advance(days=365)
        engine.sweep()
    assert engine.get(pinned.id).status.value == "active"  # type: ignore[union-attr]
    assert engine.get(loose.id) is None and engine.archive_path("user:p").exists()
