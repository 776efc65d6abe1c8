"""Fault-injection helpers: a private redis-server that tests kill and restart empty, and the real
Chroma index made to fail on demand."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight_core.errors import BackendUnavailableError
from hindsight_core.vectors.chroma import ChromaVectorIndex


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A private redis-server without persistence: stopping it disturbs nobody, restarting it gives an
    empty Redis (what a restart without RDB/AOF does in production)."""

    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        import redis

        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port).ping()
                return
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


class FailingChroma(ChromaVectorIndex):
    """The real embedded Chroma index; while ``down`` is set every call fails as an unreachable server
    would."""

    down = False

    def _check(self) -> None:
        if self.down:
            raise BackendUnavailableError("vector index: chroma is down")

    def upsert(self, *args: Any, **kwargs: Any) -> None:
        self._check()
        super().upsert(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> None:
        self._check()
        super().delete(*args, **kwargs)

    def drop_namespace(self, *args: Any, **kwargs: Any) -> None:
        self._check()
        super().drop_namespace(*args, **kwargs)

    def query_many(self, *args: Any, **kwargs: Any) -> Any:  # query() goes through it
        self._check()
        return super().query_many(*args, **kwargs)
