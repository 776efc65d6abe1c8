"""The CLI on a deployment: Redis for the activation index (option and environment variable), and
backends that do not answer (exit 3, the writes kept in the outbox)."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.redis
def test_redis_url_from_option_and_environment(
    cli: Callable[..., Any], redis_url: str, data_dir: Path, tmp_path: Path, embedder: Any, clock: Any
) -> None:
    from typer.testing import CliRunner

    from hindsight_core.cli.app import app

    ns = f"cli-test-{uuid.uuid4().hex}"
    events = tmp_path / "e.jsonl"
    events.write_text(json.dumps({"content": "I am allergic to peanuts"}) + "\n", encoding="utf-8")
    assert cli("--redis-url", redis_url, "import", str(events), "-n", ns, "--json").json()["memories"] == 1
    with Hindsight(data_dir, redis_url=redis_url, embedder=embedder, clock=clock) as hs:
        mid = hs.find(ns)[0].id
        assert [m for m, _ in hs.activation.top(ns, "episodic", 10)] == [mid]  # the key lives in Redis
    result = CliRunner().invoke(
        app, ["--path", str(data_dir), "--no-progress", "recall", ns, "Do I have any food allergies?", "--json"],
        env={"HINDSIGHT_REDIS_URL": redis_url}, obj={"clock": clock, "embedder": embedder},
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["hits"][0]["memory"]["id"] == mid
    assert cli("--redis-url", redis_url, "forget", ns, "--yes").exit_code == 0
    with Hindsight(data_dir, redis_url=redis_url, embedder=embedder, clock=clock) as hs:
        assert hs.activation.top(ns, "episodic", 10) == []  # erased from Redis too


def test_unreachable_backends_exit_3_and_keep_the_writes(cli: Callable[..., Any], tmp_path: Path) -> None:
    dead_redis = f"redis://127.0.0.1:{_dead_port()}/0"
    events = tmp_path / "e.jsonl"
    events.write_text(json.dumps({"content": "I am allergic to peanuts"}) + "\n", encoding="utf-8")
    imported = cli("--redis-url", dead_redis, "import", str(events), "-n", "u1", "--json")
    assert imported.exit_code == 0  # durable in SQLite; the activation write waits in the outbox
    stats = cli("--redis-url", dead_redis, "stats", "--json").json()
    assert stats["total"] == 1 and stats["outbox_pending"] == 1
    reconcile = cli("--redis-url", dead_redis, "reconcile", "--json")
    assert reconcile.exit_code == 3 and reconcile.json()["failed"] == 1
    chroma = cli("--chroma-url", f"http://127.0.0.1:{_dead_port()}", "ls", "u1")
    assert chroma.exit_code == 3
    assert chroma.stderr.startswith("error: vector index: no Chroma server answers")
    assert "Traceback" not in chroma.output
