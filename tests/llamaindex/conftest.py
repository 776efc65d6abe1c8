"""Fixtures for the LlamaIndex adapters: real engines in temp dirs sharing the session's embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.embeddings.e5 import E5Embedder


@pytest.fixture(scope="module")
def shared_hs(tmp_path_factory: pytest.TempPathFactory, embedder: E5Embedder) -> Iterator[Hindsight]:
    """One engine per test module for tests that only need isolation by namespace (cheaper than one per
    test on a 2-core machine)."""
    # Consolidation runs only when a test asks for it, so no background job changes what a test reads.
    hs = Hindsight(tmp_path_factory.mktemp("li") / "data", embedder=embedder, background_consolidation=False)
    yield hs
    hs.close()


@pytest.fixture
def fresh_path(tmp_path: Path) -> Path:
    return tmp_path / "data"
