"""The engine against a real Chroma server (``chroma run``, started by the fixture): the same
answers as embedded Chroma, and the server SIGKILLed mid-run: writes are acknowledged and kept in the
outbox, recall is flagged degraded and still finds them, and the backlog drains once it is back."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.config import HindsightConfig
from hindsight_core.errors import BackendUnavailableError

from .conftest import ChromaServer

NS = "deploy:chroma"
FACTS = [
    "I'm allergic to peanuts, seriously allergic.",
    "My sister Anna lives in Lisbon and teaches chemistry.",
    "We decided to cap the renovation budget at 30,000 euros.",
]


def test_engine_on_a_chroma_server(
    tmp_path: Path, chroma_server: ChromaServer, embedder: Any, clock: Any, index_recall: HindsightConfig
) -> None:
    with Hindsight(tmp_path / "a", chroma_url=chroma_server.url, embedder=embedder, clock=clock,
                   background_consolidation=False, config=index_recall) as hs:
        ids = [hs.record(text, NS).id for text in FACTS]
        assert hs.vectors.ids(NS, "episodic") == set(ids)  # the vectors live on the server
        result = hs.recall("What am I allergic to?", NS)
        assert result.degraded == [] and result.memories[0].id == ids[0]
        assert hs.reconcile(verify=True).failed == 0
    # nothing was kept next to the data: the embedded Chroma directory was never created
    assert not (tmp_path / "a" / "chroma").exists()


@pytest.mark.slow
def test_chroma_server_killed_mid_run(
    tmp_path: Path, chroma_server: ChromaServer, embedder: Any, clock: Any, index_recall: HindsightConfig
) -> None:
    with Hindsight(tmp_path / "a", chroma_url=chroma_server.url, embedder=embedder, clock=clock,
                   background_consolidation=False, config=index_recall) as hs:
        before = [hs.record(text, NS).id for text in FACTS]
        chroma_server.kill()
        during: list[str] = []
        for i in range(6):
            during.append(hs.record(f"Note {i}: the parcel for flat {i} waits at the front desk", NS).id)
            result = hs.recall("What am I allergic to?", NS)
            assert result.degraded == ["vector"]
            assert result.memories[0].id == before[0]
        degraded = hs.recall("Which parcel waits for flat 4?", NS)
        assert degraded.degraded == ["vector"] and during[4] in [m.id for m in degraded.memories[:3]]
        stats = hs.stats()
        assert stats.total == len(before) + len(during)
        assert stats.outbox_pending == len(during)  # only the vector rows wait; activation applied
        with pytest.raises(BackendUnavailableError, match="vector index"):
            hs.vectors.ids(NS, "episodic")
        chroma_server.start()  # same directory, same port
        time.sleep(5.1)  # the outbox leaves a failed target alone for a 5 s cool-down
        after = hs.record("The boiler was serviced on Tuesday.", NS).id  # this write drains the backlog
        assert hs.stats().outbox_pending == 0
        assert hs.vectors.ids(NS, "episodic") == {*before, *during, after}
        result = hs.recall("Which parcel waits for flat 4?", NS)
        assert result.degraded == [] and result.memories[0].id == during[4]
    # a fresh process sees the same index: nothing acknowledged was lost on the way
    with Hindsight(tmp_path / "a", chroma_url=chroma_server.url, embedder=embedder, clock=clock) as hs:
        assert hs.reconcile(verify=True).failed == 0
        assert len(hs.vectors.ids(NS, "episodic")) == len(before) + len(during) + 1


def test_server_down_at_open_is_a_backend_error(tmp_path: Path, chroma_server: ChromaServer, embedder: Any) -> None:
    chroma_server.stop()
    with pytest.raises(BackendUnavailableError, match="no Chroma server answers"):
        Hindsight(tmp_path / "a", chroma_url=chroma_server.url, embedder=embedder)
