"""The store contract runs on both backends: a SQLite file and PostgreSQL (a fresh schema per test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core.store import RelationalStore, open_store


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives; two stores opened on it share the data, as two processes would."""
    if request.param == "sqlite":
        return str(tmp_path / "store.sqlite3")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(store_location: str) -> Iterator[RelationalStore]:
    s = open_store(store_location)
    yield s
    s.close()
