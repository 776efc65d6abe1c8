"""PostgreSQL restarted under a running engine (a private cluster, stopped with ``-m immediate``, as a
crash): writes during the outage raise ``BackendUnavailableError`` and are not acknowledged, nothing
acknowledged is lost, and writes resume by themselves once the server is back."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.errors import BackendUnavailableError

from .conftest import PrivatePostgres

NS = "deploy:pg-restart"


@pytest.mark.slow
def test_postgres_restarted_mid_run(tmp_path: Path, private_postgres: PrivatePostgres, embedder: Any) -> None:
    with Hindsight(tmp_path / "data", database_url=private_postgres.url, embedder=embedder,
                   background_consolidation=False) as hs:
        acknowledged = [hs.record(f"Fact {i}: shelf {i} holds the blue folders.", NS, source_id=f"a{i}").id
                        for i in range(5)]
        private_postgres.stop("immediate")
        refused = 0
        for i in range(2):
            with pytest.raises(BackendUnavailableError):
                hs.record(f"During the outage {i}.", NS, source_id=f"down{i}")
            refused += 1
        with pytest.raises(BackendUnavailableError):
            hs.recall("Which shelf holds the blue folders?", NS)
        private_postgres.start()
        deadline = time.monotonic() + 60
        resumed = None
        while resumed is None:  # no reconnect call: the engine's next writes just work again
            try:
                resumed = hs.record("After the restart: the printer is fixed.", NS, source_id="after").id
            except BackendUnavailableError:
                assert time.monotonic() < deadline, "writes did not resume within 60 s"
                time.sleep(0.5)
        stored = {m.source_id for m in hs.find(NS, limit=100)}
        assert stored == {f"a{i}" for i in range(5)} | {"after"}  # nothing refused was written
        assert all(hs.get(mid) is not None for mid in acknowledged)
        assert hs.recall("Which shelf holds the blue folders?", NS).memories
        print(f"\nPostgreSQL restart: {len(acknowledged)} acknowledged before, {refused} refused during "
              f"(BackendUnavailableError), {len(stored)} stored after, 0 lost")
