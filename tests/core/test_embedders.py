"""The bundled embedder: one space for Chinese and English, and long texts cut to the model's window."""

from __future__ import annotations

import numpy as np

from hindsight_core.embeddings.e5 import MAX_TEXT_TOKENS, E5Embedder


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
