"""The namespace purge behind ``forget_namespace``: one schema-driven delete over every table that has a
``namespace`` column, on both backends (no engine, no models)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from hindsight_core.store import activation, demotions, grants, jobs, recall_log, starting, transcripts
from hindsight_core.store.erase import erased_among, purge_namespace
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Edge, EdgeKind, Memory

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class _Recall:
    def __init__(self, namespace: str, injected: list[str]) -> None:
        self.namespace, self.session_id, self.query, self.at = namespace, None, "q", 1.0
        self.candidates: dict[str, list[list[object]]] = {"vector": [[m, 0.5] for m in injected]}
        self.injected, self.scores, self.idle = injected, dict.fromkeys(injected, 0.5), []


def _fill(store: RelationalStore, namespace: str) -> list[str]:
    """One row of the namespace in every table the engine writes."""
    ids = [f"01J{namespace[-1].upper()}{i:022d}" for i in range(2)]
    memories = [
        Memory(id=mid, namespace=namespace, content=f"memory {mid}", occurred_at=NOW, created_at=NOW, updated_at=NOW)
        for mid in ids
    ]
    with store.transaction() as tx:
        tx.insert_memories(memories)
        tx.add_edges([Edge(src=ids[0], dst=ids[1], kind=EdgeKind.DERIVED_FROM, created_at=NOW)])
        tx.put_embeddings("model", {mid: np.ones(4, dtype=np.float32) for mid in ids})
        tx.enqueue([(mid, namespace, "episodic", "vector", "sync") for mid in ids], 1.0)
        activation.upsert(tx, namespace, "episodic", [(mid, 1.0) for mid in ids])
        recall_log.append(tx, [_Recall(namespace, ids)])
        jobs.mark_consolidated(tx, namespace, ids[:1], None, 1.0)
        transcripts.write(tx, namespace, "chat", None, ['"hello"'], 1.0)
        tx.add_history(ids[0], namespace, "memory before", f"memory {ids[0]}", 1.0, "model", np.ones(4))
        demotions.add(tx, ids[1], namespace, at=1.0, by="test", reason="not needed", log_base_before=0.0,
                      ref_time_before=1.0, status_before="active")
        assert starting.claim(tx, namespace, at=1.0, template="template")
        assert grants.put(tx, namespace, "agent:reader", 1.0)
    jobs.create(store, namespace, None, "manual", 1.0)
    return ids


def _rows(store: RelationalStore, namespace: str) -> dict[str, int]:
    return {
        table: int(store.query(f"SELECT COUNT(*) FROM {table} WHERE namespace = ?", (namespace,))[0][0])
        for table in store.tables_with_column("namespace")
    }


def test_purge_empties_every_namespace_table_and_leaves_other_namespaces(store: RelationalStore) -> None:
    gone = _fill(store, "user:a")
    kept = _fill(store, "user:b")
    before_b = _rows(store, "user:b")
    assert all(before_b[t] > 0 for t in before_b if t != "erased_memories")

    with store.transaction() as tx:
        assert sorted(purge_namespace(tx, "user:a", 5.0)) == sorted(gone)

    after_a = _rows(store, "user:a")
    assert after_a.pop("erased_memories") == len(gone)  # tombstones stay, and only those
    assert set(after_a.values()) == {0}
    assert erased_among(store, [*gone, *kept]) == set(gone)
    assert store.get_embeddings("model", gone) == {}
    assert store.edges(gone[0]) == []
    assert _rows(store, "user:b") == before_b
    assert set(store.get_embeddings("model", kept)) == set(kept)
    assert [e.dst for e in store.edges(kept[0])] == [kept[1]]


def test_purge_reaches_a_table_added_later(store: RelationalStore) -> None:
    """A table a later migration adds is purged without being listed: the purge reads the schema."""
    _fill(store, "user:a")
    store.execute("CREATE TABLE later_feature (namespace TEXT NOT NULL, value TEXT)")
    store.execute("INSERT INTO later_feature VALUES ('user:a', 'x'), ('user:b', 'y')")
    with store.transaction() as tx:
        purge_namespace(tx, "user:a", 5.0)
    assert store.query("SELECT namespace FROM later_feature") == [("user:b",)]
