"""Rows read back as ``Memory`` are built without validation (store/sql.py ``_memory``): each must be
exactly the model validation would give, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hindsight_core.store import RelationalStore
from hindsight_core.types import Activation, Kind, Layer, Memory, Status

NOW = datetime(2026, 1, 1, 12, 30, 15, 250_000, tzinfo=UTC)


def _varied() -> list[Memory]:
    """Memories whose every field is set, and some left at its default, across layers, kinds and statuses."""
    return [
        Memory(id="m1", namespace="user:a", content="plain", occurred_at=NOW, created_at=NOW, updated_at=NOW),
        Memory(id="m2", namespace="user:a", session_id="s1", layer=Layer.SEMANTIC, kind=Kind.PREFERENCE,
               role="assistant", content="likes tea ünï", occurred_at=NOW - timedelta(days=3), created_at=NOW,
               updated_at=NOW + timedelta(seconds=1), importance=5,
               activation=Activation(log_base=1.25, ref_time=1_700_000_000.5), access_count=7,
               source_ids=["m1"], source_id="caller-1", entities=["Lily", "Paris"], fingerprint="f" * 32,
               status=Status.SUPERSEDED, superseded_by="m3", expires_at=NOW + timedelta(days=30), indexed=False,
               metadata={"k": [1, 2.5, True, None], "nested": {"a": "b"}}),
        Memory(id="m3", namespace="user:a", layer=Layer.PROCEDURAL, kind=Kind.PROCEDURE, content="do x",
               occurred_at=NOW, created_at=NOW, updated_at=NOW, importance=1, status=Status.COLD,
               activation=Activation(log_base=-3.0, ref_time=0.0)),
    ]


def test_rows_read_back_equal_validated_memories(store: RelationalStore) -> None:
    written = _varied()
    with store.transaction() as tx:
        tx.insert_memories(written)
    read = store.get_many_in("user:a", [m.id for m in written])
    for original in written:
        got = read[original.id]
        validated = Memory.model_validate(got.model_dump())
        assert got == original == validated
        # the same types field by field (an int where validation gives a float would compare equal)
        assert [(k, type(v)) for k, v in got.__dict__.items()] == [
            (k, type(v)) for k, v in validated.__dict__.items()
        ]
        assert type(got.activation.log_base) is float and type(got.activation.ref_time) is float
        assert got.model_fields_set == validated.model_fields_set
        assert got.model_dump_json() == validated.model_dump_json() == original.model_dump_json()
        assert got.occurred_at.tzinfo is not None
