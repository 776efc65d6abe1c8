"""The inspector's pages, through Starlette's TestClient, on a real embedded engine with recorded,
consolidated and recalled memories."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from hindsight_core.types import Layer

pytest.importorskip("starlette", reason="the ui extra is not installed")

from starlette.testclient import TestClient  # noqa: E402

from hindsight_core.ui import create_app  # noqa: E402

from .conftest import NS, OTHER, Recorded  # noqa: E402  (importlib mode: the directory's conftest)


@pytest.fixture
def client(recorded: Recorded) -> Iterator[TestClient]:
    with TestClient(create_app(recorded.engine), base_url="http://127.0.0.1") as c:
        yield c


def test_smoke(client: TestClient, recorded: Recorded) -> None:
    for url in ["/", "/ns?" + urlencode({"name": NS}), f"/memory/{recorded.old_city.id}", f"/memory/{recorded.allergy.id}",
                "/recall?" + urlencode({"ns": NS, "q": "Where do I live?"}), "/health"]:
        r = client.get(url)
        assert r.status_code == 200, (url, r.text[:2000])
        print(url, len(r.text))
