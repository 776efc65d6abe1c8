"""Real services for the deployment tests, started by the tests themselves on free ports: a Chroma
server (``chroma run``, shipped with the ``chromadb`` package) that a test can kill and restart on its
data directory, and a three-node Redis Cluster built with ``redis-cli --cluster create``. Nothing
here touches the shared Redis on 6379."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def service_env() -> dict[str, str]:
    """The environment for every process a test starts: offline, no telemetry, this checkout first."""
    root = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ,
        "ANONYMIZED_TELEMETRY": "False",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }


def _chroma_command() -> list[str]:
    """``chroma`` from the interpreter's own environment (the console script chromadb installs)."""
    script = Path(sys.executable).with_name("chroma")
    if script.exists():
        return [str(script)]
    found = shutil.which("chroma")
    if found is None:
        pytest.fail("the chromadb package's `chroma` command is not installed")
    return [found]


class ChromaServer:
    """``chroma run --path DIR --port PORT`` as a child process; ``kill()`` is a SIGKILL (nothing
    flushed), ``start()`` again serves the same directory on the same port."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = path.with_suffix(".log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answers(self) -> bool:
        for endpoint in ("/api/v2/heartbeat", "/api/v1/heartbeat"):
            try:
                with urllib.request.urlopen(self.url + endpoint, timeout=1) as response:
                    if response.status == 200:
                        return True
            except OSError:
                continue
        return False

    def start(self, timeout: float = 60.0) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [*_chroma_command(), "run", "--path", str(self.path), "--host", "127.0.0.1",
                 "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=service_env(), start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None:
                pytest.fail(f"chroma run exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"chroma run did not answer within {timeout:.0f}s: {self.log.read_text()[-2000:]}")
            time.sleep(0.2)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path / "chroma-server")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_port(taken: set[int]) -> int:
    """A free port whose cluster-bus port (``port + 10000``) is free too; ephemeral ports from the OS
    are often above 55535, where the bus port does not exist."""
    import random

    for _ in range(1000):
        port = random.randint(20000, 30000)
        if port not in taken and _bindable(port) and _bindable(port + 10000):
            return port
    raise RuntimeError("no free port pair for a Redis Cluster node")


class RedisCluster:
    """Three ``redis-server --cluster-enabled yes`` masters on free ports, joined by
    ``redis-cli --cluster create``; no persistence, private directories, stopped at the end."""

    def __init__(self, workdir: Path, nodes: int = 3) -> None:
        self.workdir = workdir
        self.ports: list[int] = []
        for _ in range(nodes):
            self.ports.append(cluster_port(set(self.ports)))
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"

    def start(self) -> None:
        for port in self.ports:
            node_dir = self.workdir / str(port)
            node_dir.mkdir(parents=True, exist_ok=True)
            self.procs.append(
                subprocess.Popen(
                    ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                     "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000", "--save", "",
                     "--appendonly", "no", "--dir", str(node_dir)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
            )
        for port in self.ports:
            self._wait(lambda p=port: self._cli(p, "ping").stdout.strip() == "PONG", "node start")
        created = subprocess.run(
            ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports),
             "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True, text=True, timeout=60,
        )
        assert created.returncode == 0, created.stdout + created.stderr
        self._wait(
            lambda: all("cluster_state:ok" in self._cli(p, "cluster", "info").stdout for p in self.ports),
            "cluster_state:ok",
        )

    def _cli(self, port: int, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=10)

    @staticmethod
    def _wait(check: object, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():  # type: ignore[operator]
            assert time.monotonic() < deadline, f"redis cluster: no {what} within {timeout:.0f}s"
            time.sleep(0.1)

    def stop(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()
        self.procs = []


@pytest.fixture
def redis_cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        pytest.fail("redis-server and redis-cli are required for the Redis Cluster test")
    cluster = RedisCluster(tmp_path / "redis-cluster")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


class PrivatePostgres:
    """A private PostgreSQL 15 cluster (``initdb`` in a temp dir, trust auth, a free port) that a test
    may stop and restart without touching the shared server on 5432. Run as the ``postgres`` user when
    the tests run as root (``initdb`` refuses root)."""

    BIN = Path("/usr/lib/postgresql/15/bin")

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.data = workdir / "pgdata"
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr

    def init(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.workdir, "postgres")
        self._run(str(self.BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def start(self) -> None:
        self._run(str(self.BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.workdir / "log"), "-w", "-o",
                  f"-p {self.port} -k {self.workdir} -c listen_addresses=127.0.0.1", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")


@pytest.fixture
def private_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivatePostgres]:
    if not (PrivatePostgres.BIN / "initdb").exists():
        pytest.fail("PostgreSQL 15 binaries are required (/usr/lib/postgresql/15/bin)")
    server = PrivatePostgres(Path(tempfile.mkdtemp(prefix="deploy-pg-")))
    server.init()
    server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(AssertionError):  # already stopped
            server.stop("immediate")
        shutil.rmtree(server.workdir, ignore_errors=True)
