"""Shared layers on the deployment backends (issue 32): PostgreSQL, a Chroma server and Redis, two
engines on the same data as two app processes would be. A grant made by one is read by the other's next
recall, through the vector index (not a scan of the snapshot), and a revocation holds from the other's
next recall too: grants are read from the store on every recall, never cached in a process."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.config import HindsightConfig

from .conftest import ChromaServer

ANSWER = "Carry-on bags on the partner airline may weigh at most 8 kg."


@pytest.mark.redis
def test_a_grant_and_its_revocation_reach_another_engine_on_postgres_chroma_redis(
    tmp_path: Path, chroma_server: ChromaServer, postgres_url: str, redis_url: str, embedder: Any, clock: Any,
    index_recall: HindsightConfig,
) -> None:
    run = uuid.uuid4().hex[:8]
    shared, agent = f"kb:{run}", f"agent:{run}"

    def engine(name: str) -> Hindsight:
        return Hindsight(tmp_path / name, database_url=postgres_url, chroma_url=chroma_server.url,
                         redis_url=redis_url, embedder=embedder, clock=clock, background_consolidation=False,
                         config=index_recall)

    with engine("admin") as admin, engine("app") as app:
        admin.record(ANSWER, shared, layer="semantic", kind="fact")
        admin.record("Lounge access comes with the gold card only.", shared, layer="semantic", kind="fact")
        app.record("I fly to Oslo on Friday with just a backpack.", agent, session_id="s1", role="user")
        question = "How heavy can my carry-on bag be?"
        assert "8 kg" not in app.recall(question, agent).to_prompt()
        admin.grant(shared, to=agent)
        result = app.recall(question, agent)
        assert result.degraded == []
        assert f'shared from {shared}] "{ANSWER}"' in result.to_prompt()
        assert [g.grantee for g in app.grants(shared)] == [agent]
        admin.revoke(shared, to=agent)
        assert "8 kg" not in app.recall(question, agent).to_prompt()
        admin.forget_namespace(shared)
        app.forget_namespace(agent)
