"""The outbox: work coalesces per memory, and one row that keeps failing cannot block the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hindsight_core import Hindsight
from hindsight_core.config import HindsightConfig, WriteConfig
from hindsight_core.errors import BackendUnavailableError
from hindsight_core.vectors.chroma import ChromaVectorIndex

NS = "outbox:test"


class PoisonChroma(ChromaVectorIndex):
    """The real Chroma index refusing any batch that contains one poisoned id (a row fault), and failing
    every call while ``down`` (the target unreachable)."""

    poison: str | None = None
    down = False

    def upsert(self, namespace: str, layer: str, ids: Any, vectors: np.ndarray, kinds: Any) -> None:
        if self.down:
            raise BackendUnavailableError("vector index: down")
        if self.poison in ids:
            raise ValueError(f"cannot index {self.poison}")
        super().upsert(namespace, layer, ids, vectors, kinds)

    def delete(self, namespace: str, layer: str, ids: Any) -> None:
        if self.down:
            raise BackendUnavailableError("vector index: down")
        super().delete(namespace, layer, ids)


def _engine(tmp_path: Path, embedder: Any, index: ChromaVectorIndex, attempts: int = 3) -> Hindsight:
    config = HindsightConfig(write=WriteConfig(outbox_max_attempts=attempts))
    return Hindsight(tmp_path / "data", embedder=embedder, vector_index=index, config=config)


def test_one_failing_row_is_isolated_charged_and_parked(tmp_path: Path, embedder) -> None:
    chroma = PoisonChroma(tmp_path / "chroma")
    with _engine(tmp_path, embedder, chroma) as hs:
        chroma.down = True
        stored = [hs.record(f"Delivery note {i}: box {i} goes to shelf {i}", NS) for i in range(6)]
        chroma.poison = stored[2].id
        chroma.down = False
        hs.outbox.apply(None, force=True)
        good = {m.id for m in stored} - {stored[2].id}
        assert hs.vectors.ids(NS, "episodic") == good, "the good rows apply despite the bad one"
        (row,) = hs.store.pending(target="vector")
        assert row.memory_id == stored[2].id and row.attempts == 1
        # an outage charges nobody, nor does a drain where nothing applies
        for down in (True, False):
            chroma.down = down
            hs.outbox.apply(None, force=True)
            assert hs.store.pending(target="vector")[0].attempts == 1
        chroma.down = False
        for i in range(2):  # traffic: each drain applies other work next to the bad row
            chroma.down = True
            hs.record(f"Delivery note {10 + i}: box {10 + i} waits", NS)
            chroma.down = False
            hs.outbox.apply(None, force=True)
        stats = hs.stats()
        assert stats.outbox_pending == 0 and stats.outbox_parked == 1
        (parked,) = stats.outbox_errors
        assert parked.memory_id == stored[2].id and parked.target == "vector" and parked.attempts == 3
        assert parked.error and "cannot index" in parked.error
        # later writes are not held back by the parked row
        late = hs.record("Delivery note 9: box 9 goes to shelf 9", NS)
        assert late.id in hs.vectors.ids(NS, "episodic")
        # reconcile retries parked work
        chroma.poison = None
        assert hs.reconcile(verify=True).failed == 0
        assert hs.stats().outbox_parked == 0 and hs.store.pending_count() == 0
        assert len(hs.vectors.ids(NS, "episodic")) == len(stored) + 3


def test_record_forget_coalesces_and_drains_without_duplicate_ids(tmp_path: Path, embedder) -> None:
    chroma = PoisonChroma(tmp_path / "chroma")
    with _engine(tmp_path, embedder, chroma) as hs:
        kept = hs.record("The invoice for March is paid", NS)
        chroma.down = True
        gone = hs.record("The invoice for April is open", NS)
        assert hs.forget(gone.id)
        again = hs.record("The invoice for April is paid", NS)
        assert len(hs.store.pending(memory_ids=[gone.id], target="vector")) == 1
        chroma.down = False
        report = hs.outbox.apply(None, force=True)
        assert report.errors == {} and hs.store.pending_count() == 0
        assert hs.vectors.ids(NS, "episodic") == {kept.id, again.id}
        assert hs.reconcile(verify=True).failed == 0


def test_reopening_an_old_outbox_with_duplicate_rows_coalesces_them(tmp_path: Path, embedder) -> None:
    """Rows queued twice before the migration are merged by it, so the first drain cannot wedge."""
    chroma = PoisonChroma(tmp_path / "chroma")
    with _engine(tmp_path, embedder, chroma) as hs:
        m = hs.record("The courier comes on Fridays", NS)
        assert hs.forget(m.id)
        hs.store.execute("DROP INDEX ux_outbox_sync")
        hs.store.execute("DROP INDEX ix_outbox_target")
        hs.store.execute("DROP TABLE engine_meta")
        chroma._client.delete_collection(chroma.marker)  # that version named no data set in the index
        hs.store.execute("DELETE FROM schema_migrations WHERE name = '0006_outbox_coalesce_park'")
        for _ in range(3):
            hs.store.execute(
                "INSERT INTO outbox(memory_id, namespace, layer, target, op, created_at) VALUES (?, ?, ?, ?, ?, 0)",
                (m.id, NS, "episodic", "vector", "sync"),
            )
        hs.store.execute("ALTER TABLE outbox DROP COLUMN version")
        hs.store.execute("ALTER TABLE outbox DROP COLUMN parked")
    with _engine(tmp_path, embedder, PoisonChroma(tmp_path / "chroma")) as hs:
        assert hs.store.pending_count() == 0
        assert hs.vectors.ids(NS, "episodic") == set()


class RefusingChroma(ChromaVectorIndex):
    """The real Chroma index refusing every write with a non-connection error."""

    refuse = False

    def upsert(self, *args: Any, **kwargs: Any) -> None:
        if self.refuse:
            raise RuntimeError("index is read-only")
        super().upsert(*args, **kwargs)


def test_a_failure_of_every_row_parks_nothing(tmp_path: Path, embedder) -> None:
    """When nothing applies the target is failing, not a row: nobody is charged, nothing is parked."""
    chroma = RefusingChroma(tmp_path / "chroma")
    with _engine(tmp_path, embedder, chroma, attempts=2) as hs:
        chroma.refuse = True
        stored = [hs.record(f"Meter reading {i}: {i * 111} kWh", NS) for i in range(4)]
        for _ in range(4):
            hs.outbox.apply(None, force=True)
        assert hs.stats().outbox_parked == 0
        assert {r.attempts for r in hs.store.pending(target="vector")} == {0}
        chroma.refuse = False
        assert hs.reconcile().failed == 0
        assert hs.vectors.ids(NS, "episodic") == {m.id for m in stored}
