"""The model-free embedder tests and benchmarks share: the same text gives the same vector in another
process (stored vectors stay valid when a second engine opens them), and shared words mean closeness."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from hindsight_core.embeddings.hashed import HashedWordEmbedder


def test_the_same_text_gives_the_same_vector_in_another_process() -> None:
    text = "My sister Ana moved to Lisbon in May"
    child = subprocess.run(
        [sys.executable, "-c", "from hindsight_core.embeddings.hashed import HashedWordEmbedder as E;"
         f"print(','.join(map(repr, E(48).embed_query({text!r}).tolist())))"],
        check=True, capture_output=True, text=True,
    )
    there = np.array([float(x) for x in child.stdout.split(",")], dtype=np.float32)
    assert np.allclose(HashedWordEmbedder(48).embed_query(text), there)


def test_texts_sharing_words_are_closer_than_unrelated_ones() -> None:
    embedder = HashedWordEmbedder()
    anchor, near, far = embedder.embed_documents(
        ["my sister lives in Lisbon", "where does my sister live? Lisbon", "the quarterly invoice is overdue"]
    )
    assert float(anchor @ near) > float(anchor @ far) + 0.3
    assert np.isclose(float(np.linalg.norm(anchor)), 1.0)


def test_width_and_name_follow_the_arguments() -> None:
    assert HashedWordEmbedder(32).embed_documents(["a b"]).shape == (1, 32)
    assert HashedWordEmbedder(32).name == "hashed-words-32"
    assert HashedWordEmbedder(32, name="test/x").name == "test/x"
    assert HashedWordEmbedder().embed_documents([]).shape == (0, 384)
