"""Shared fixtures: a fixed, advanceable clock, an embedded engine in a temp dir, and a real Redis."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import hindsight_core.engine as engine_module
from hindsight_core import Hindsight, InvalidInputError
from hindsight_core.config import HindsightConfig, RecallConfig
from hindsight_core.embeddings.e5 import E5Embedder

REDIS_URL = os.environ.get("HINDSIGHT_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


class FixedClock:
    """A clock tests move by hand: ``clock.advance(days=3)``."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> datetime:
        self.current += timedelta(**delta)
        return self.current

    def set(self, value: datetime) -> None:
        self.current = value


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture(scope="session")
def embedder() -> E5Embedder:
    """One model instance for the whole run (loading is cheap, but threads are not)."""
    return E5Embedder()


@pytest.fixture
def index_recall() -> HindsightConfig:
    """A configuration whose recalls query the vector index whatever the namespace's size: a test of the
    index path (an outage flagged ``degraded``) says so, since a small namespace's vector channel
    otherwise scans the snapshot and never reads the index (``recall.exact_vector_max_memories``)."""
    return HindsightConfig(recall=RecallConfig(exact_vector_max_memories=0))


@pytest.fixture
def engine(tmp_path: Path, clock: FixedClock, embedder: E5Embedder) -> Iterator[Hindsight]:
    hs = Hindsight(tmp_path / "data", clock=clock, embedder=embedder)
    yield hs
    hs.close()


def _redis_or_fail() -> object:
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Redis is required in CI but {REDIS_URL} does not answer: {exc}")
        pytest.skip(f"no Redis at {REDIS_URL} (start one: redis-server --daemonize yes)")
    return client


@pytest.fixture
def redis_client() -> Iterator[object]:
    """A real Redis connection. Tests isolate themselves by key prefix, never FLUSHDB."""
    client = _redis_or_fail()
    yield client
    client.close()  # type: ignore[attr-defined]


@pytest.fixture
def redis_url(redis_client: object) -> str:
    """The URL of the real Redis the tests use (database 15 unless HINDSIGHT_TEST_REDIS_URL says)."""
    return REDIS_URL


@pytest.fixture
def redis_prefix(redis_client: object) -> Iterator[str]:
    prefix = f"hstest-{uuid.uuid4().hex[:10]}"
    yield prefix
    for key in redis_client.scan_iter(f"{prefix}:*"):  # type: ignore[attr-defined]
        redis_client.delete(key)  # type: ignore[attr-defined]


POSTGRES_URL = os.environ.get("HINDSIGHT_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


@contextlib.contextmanager
def _fresh_schema() -> Iterator[str]:
    """A URL to the real PostgreSQL (``HINDSIGHT_TEST_DATABASE_URL``, default db ``test`` on 5432) whose
    search_path is a fresh schema ``hs_<random>``, dropped afterwards: tests never touch other data."""
    import psycopg

    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required in CI but {POSTGRES_URL} does not answer: {exc}")
        pytest.skip(f"no PostgreSQL at {POSTGRES_URL} (pg_ctlcluster 15 main start)")
    schema = f"hs_{uuid.uuid4().hex[:12]}"
    admin.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{separator}options=-csearch_path%3D{schema}"
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh schema of the real PostgreSQL: a data set of its own (see :func:`_fresh_schema`)."""
    with _fresh_schema() as url:
        yield url


@pytest.fixture
def other_postgres_url() -> Iterator[str]:
    """A second fresh schema on the same server: another data set beside ``postgres_url``'s (staging
    beside production)."""
    with _fresh_schema() as url:
        yield url


@contextlib.contextmanager
def _opener(path: Path, url: str | None, clock: Any, embedder: E5Embedder) -> Iterator[Callable[..., Hindsight]]:
    """``make(**kwargs)`` opens an engine on the data at ``path`` (``url``: on PostgreSQL), as often as
    a test asks; every engine it opened is closed after the test."""
    opened: list[Hindsight] = []

    def make(**kwargs: Any) -> Hindsight:
        hs = Hindsight(path, database_url=url, clock=clock, embedder=embedder, background_consolidation=False,
                       **kwargs)
        opened.append(hs)
        return hs

    try:
        yield make
    finally:
        for hs in opened:
            hs.close()


@pytest.fixture(params=["sqlite", "postgres"])
def open_engine(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Any, embedder: E5Embedder
) -> Iterator[Callable[..., Hindsight]]:
    """Opens an engine on SQLite or PostgreSQL (again after ``close``: a restart on the same data);
    keyword arguments go to ``Hindsight`` (an extractor, a template)."""
    url = str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else None
    with _opener(tmp_path / "data", url, clock, embedder) as make:
        yield make


@pytest.fixture
def open_elsewhere(
    request: pytest.FixtureRequest, open_engine: Callable[..., Hindsight], tmp_path: Path, clock: Any,
    embedder: E5Embedder,
) -> Iterator[Callable[..., Hindsight]]:
    """A second data set on ``open_engine``'s backend (another directory; on PostgreSQL another schema),
    empty until something is imported into it."""
    backend = request.node.callspec.params["open_engine"]
    url = str(request.getfixturevalue("other_postgres_url")) if backend == "postgres" else None
    with _opener(tmp_path / "elsewhere", url, clock, embedder) as make:
        yield make


#: Fixtures that bring a real model, a real server or another process: a test that uses one (directly or
#: through another fixture) is in the integration tier.
_REAL_FIXTURES = frozenset({
    "embedder", "redis_client", "postgres_url", "other_postgres_url", "chroma_server", "redis_cluster",
    "private_postgres", "private_redis", "minilm",
})
#: What an adapter built without a namespace says (``hindsight_core.integration.require_namespace``).
NAMESPACE_HINT = r"needs namespace=\.\.\.: whose memory is this\? .*e\.g\. namespace='user:42'"


@pytest.fixture
def default_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Where the process-wide engine would open (none is open yet)."""
    monkeypatch.setenv("HINDSIGHT_PATH", str(tmp_path / "default"))
    monkeypatch.setattr(engine_module, "_shared", None)
    yield tmp_path / "default"
    if engine_module._shared is not None:
        engine_module._shared.close()


def assert_refused_without_namespace(build: Callable[[], Any], default_dir: Path) -> None:
    """``build`` (an adapter with no namespace) raises with the hint before any default engine opens:
    no adapter falls back to a shared namespace every user would read and write."""
    with pytest.raises(InvalidInputError, match=NAMESPACE_HINT):
        build()
    assert engine_module._shared is None and not default_dir.exists()


#: Folders whose tests drive the real frameworks, browsers, notebooks, servers or the README's snippets.
_INTEGRATION_FOLDERS = frozenset({
    "langchain", "llamaindex", "deploy", "faults", "ui", "docs", "cli", "test_notebooks_clean.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Two tiers: ``-m "not integration"`` is the fast unit tier (in-process backends, no model),
    ``-m integration`` the rest; CI runs both. A test is tiered by what it uses, not by a list of tests."""
    root = Path(__file__).parent
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        try:
            folder = Path(str(item.path)).relative_to(root).parts[0]
        except ValueError:  # a notebook or another root
            folder = ""
        if (used & _REAL_FIXTURES or "postgres" in params.values() or folder in _INTEGRATION_FOLDERS
                or not str(item.path).startswith(str(root))):
            item.add_marker(pytest.mark.integration)
