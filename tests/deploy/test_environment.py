"""Configuration from the environment: ``HINDSIGHT_DATABASE_URL``, ``HINDSIGHT_CHROMA_URL`` and
``HINDSIGHT_REDIS_URL`` put an engine built without those arguments on the real services (PostgreSQL,
a Chroma server, Redis); the adapters' shared engine follows them; an explicit argument wins."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.activation.redis import RedisActivationIndex
from hindsight_core.activation.sqlite import SqliteActivationIndex
from hindsight_core.store.postgres import PostgresStore
from hindsight_core.store.sql import RelationalStore

from .conftest import ChromaServer


@pytest.mark.redis
def test_environment_configures_the_engine_and_arguments_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chroma_server: ChromaServer, postgres_url: str,
    redis_url: str, embedder: Any,
) -> None:
    monkeypatch.setenv("HINDSIGHT_DATABASE_URL", postgres_url)
    monkeypatch.setenv("HINDSIGHT_CHROMA_URL", chroma_server.url)
    monkeypatch.setenv("HINDSIGHT_REDIS_URL", redis_url)
    monkeypatch.setenv("HINDSIGHT_PATH", str(tmp_path / "from-env"))
    ns = f"env:{uuid.uuid4().hex[:8]}"
    with Hindsight(embedder=embedder, background_consolidation=False) as hs:
        assert isinstance(hs.store, PostgresStore)
        assert isinstance(hs.activation, RedisActivationIndex)
        assert hs.path == tmp_path / "from-env"
        mid = hs.record("I keep my bicycle in the shed", ns).id
        assert hs.vectors.ids(ns, "episodic") == {mid}  # on the server
        assert [m for m, _ in hs.activation.top(ns, "episodic", 5)] == [mid]  # in Redis
        assert not any((tmp_path / "from-env" / name).exists() for name in ("chroma", "hindsight.sqlite3"))
    # a second process-like engine with the same environment sees the same memory
    with Hindsight(embedder=embedder, background_consolidation=False) as again:
        assert again.get(mid) is not None and again.recall("Where is my bicycle?", ns).memories[0].id == mid
        again.forget_namespace(ns)
    # explicit arguments win; an empty string turns a service off
    with Hindsight(tmp_path / "local", database_url=None, chroma_url="", redis_url="", embedder=embedder,
                   background_consolidation=False) as local:
        assert isinstance(local.activation, SqliteActivationIndex)
        assert (tmp_path / "local" / "chroma").exists()
        assert isinstance(local.store, PostgresStore)  # database_url=None still reads the variable
    monkeypatch.delenv("HINDSIGHT_DATABASE_URL")
    with Hindsight(tmp_path / "sqlite", chroma_url="", redis_url="", embedder=embedder) as local:
        assert type(local.store) is RelationalStore and (tmp_path / "sqlite" / "hindsight.sqlite3").exists()


def test_adapters_default_engine_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chroma_server: ChromaServer
) -> None:
    """The process-wide engine the LangChain and LlamaIndex adapters use without ``engine=``."""
    from hindsight_core import engine as engine_module

    monkeypatch.setenv("HINDSIGHT_PATH", str(tmp_path / "shared"))
    monkeypatch.setenv("HINDSIGHT_CHROMA_URL", chroma_server.url)
    monkeypatch.setattr(engine_module, "_shared", None)
    shared = engine_module.shared_engine()
    try:
        from hindsight_langchain import HindsightRetriever

        retriever = HindsightRetriever(namespace="env:adapter")
        assert retriever.hindsight is shared
        mid = shared.record("My sister Anna lives in Lisbon", "env:adapter").id
        assert mid in shared.vectors.ids("env:adapter", "episodic")  # the server, not an embedded directory
        assert not (tmp_path / "shared" / "chroma").exists()
        docs = retriever.invoke("Where does Anna live?")
        assert docs and docs[0].metadata["memory_id"] == mid
    finally:
        shared.close()
