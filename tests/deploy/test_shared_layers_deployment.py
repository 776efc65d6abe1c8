"""Issue 32 on the deployment backends: PostgreSQL, a Chroma server and Redis, two engines on the same
data as two app processes would be. A grant made by one is read by the other's next recall, through the
vector index (not a scan of the snapshot), and a revocation holds from the other's next recall too:
grants are read from the store on every recall, never cached in a process. A new user's starting memories
are written once whichever engine meets them first, and give way to the user's word; a demotion made by
one engine ranks the memory last in the other's recall (the activation lives in Redis) until reinstated."""

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


@pytest.mark.redis
def test_starting_memories_and_forgetting_on_request_across_engines_on_postgres_chroma_redis(
    tmp_path: Path, chroma_server: ChromaServer, postgres_url: str, redis_url: str, embedder: Any, clock: Any,
    index_recall: HindsightConfig,
) -> None:
    user = f"user:{uuid.uuid4().hex[:8]}"
    template = ["The user prefers metric units."]

    def engine(name: str) -> Hindsight:
        return Hindsight(tmp_path / name, database_url=postgres_url, chroma_url=chroma_server.url,
                         redis_url=redis_url, embedder=embedder, clock=clock, background_consolidation=False,
                         config=index_recall, starting_memories=template)

    with engine("a") as a, engine("b") as b:
        a.record("Hi, I'm planning my garden this spring.", user, session_id="s1", role="user")
        b.record("I grow tomatoes and basil.", user, session_id="s1", role="user")
        starting = [m for m in b.find(user) if m.starting]
        assert [m.content for m in starting] == template  # once, though both engines met the new user
        assert "metric units" in b.recall("Convert the bed size for me, it's 2 by 3.", user).to_prompt()
        favourite = a.record("My favourite vegetable to grow is tomatoes.", user, session_id="s1", role="user").id
        also = a.record("Tomatoes are what I love growing most.", user, session_id="s1", role="user").id

        def ranked(hs: Hindsight) -> list[str]:
            hits = hs.recall("Which vegetable do I like growing best?", user, track=False).hits
            return [h.memory.id for h in hits if h.memory.id in (favourite, also)]

        assert ranked(b)[0] == favourite
        a.demote(favourite, namespace=user, reason="no longer true", by="agent:garden")
        assert ranked(b) == [also, favourite]  # the other engine ranks it last
        b.reinstate(favourite, namespace=user)
        assert ranked(a)[0] == favourite
        a.forget_namespace(user)
