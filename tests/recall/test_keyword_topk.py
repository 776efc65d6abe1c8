"""The keyword index's sums and the channels' partial sorts give what the full computation gives: the
same documents, the same floats and the same order (ties included), on both of the union's paths."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from hindsight_core.recall import channels as ch
from hindsight_core.recall import keyword
from hindsight_core.recall.corpus import Corpus
from hindsight_core.recall.keyword import KeywordIndex, best_positive
from hindsight_core.recall.types import QueryAnalysis
from hindsight_core.types import Layer


def _reference(index: KeywordIndex, terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """BM25Okapi per document as a union by ``np.unique`` and sums by ``np.add.at`` (the former code)."""
    view = index.view(index.size)
    lengths = index._lengths.array
    docs_parts, score_parts = [], []
    for term in terms:
        postings = index._postings.get(term)
        if postings is None:
            continue
        docs, tfs = postings.arrays(view.size)
        tf = tfs.astype(np.float64)
        norm = 1.5 * (1 - 0.75 + 0.75 * lengths[docs] / view._avgdl)
        docs_parts.append(docs)
        score_parts.append(view.idf(term) * (tf * 2.5 / (tf + norm)))
    docs = np.concatenate(docs_parts).astype(np.int64)
    unique, inverse = np.unique(docs, return_inverse=True)
    summed = np.zeros(unique.size)
    np.add.at(summed, inverse, np.concatenate(score_parts))
    return unique, summed


def _corpus_texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}x" for i in range(60)]
    p = 1.0 / np.arange(1, 61)
    p /= p.sum()
    return [" ".join(words[int(i)] for i in rng.choice(60, size=int(rng.integers(1, 80)), p=p)) for _ in range(n)]


@pytest.mark.parametrize("share", [0, 10**9])  # the merge of sorted postings, then the dense sum
def test_sparse_scores_are_the_same_floats_on_both_paths(monkeypatch: pytest.MonkeyPatch, share: int) -> None:
    monkeypatch.setattr(keyword, "_DENSE_SHARE", share)
    index = KeywordIndex(_corpus_texts(3000, seed=1))
    for terms in (["w0x", "w1x"], ["w0x", "w5x", "w0x", "w30x", "w59x"], ["w2x", "nothing", "w3x", "w4x"],
                  [f"w{i}x" for i in range(20)]):
        docs, scores = index.view(index.size).sparse(terms)
        want_docs, want_scores = _reference(index, terms)
        assert np.array_equal(docs, want_docs)
        assert np.array_equal(scores, want_scores)  # bit for bit: the fusion's spread reads these sums


def test_best_positive_is_the_prefix_of_a_stable_full_sort() -> None:
    rng = np.random.default_rng(4)
    for size in (0, 1, 5, 50, 2000):
        scores = np.round(rng.standard_normal(size), 1)  # many ties, some not positive
        positive = np.flatnonzero(scores > 0)
        full = positive[np.argsort(-scores[positive], kind="stable")]
        for n in (1, 3, 10, 60, 5000):
            assert best_positive(scores, n).tolist() == full[:n].tolist()


class _Rows:
    """The snapshot rows a set channel reads (an id and a layer by position), as plain data."""

    def __init__(self, layers: list[Layer]) -> None:
        self.layers = layers

    def id_at(self, i: int) -> str:
        return f"m{i}"

    def layer_at(self, i: int) -> Layer:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)


def _input(size: int, entities: dict[str, list[int]], names: list[str], n: int) -> ch.ChannelInput:
    layers = [Layer.SEMANTIC if i % 7 == 0 else Layer.EPISODIC for i in range(size)]
    corpus = Corpus(key=("ns", False), memories=_Rows(layers), vectors=np.zeros((size, 4), dtype=np.float32),
                    keyword=KeywordIndex().view(0), entities=entities)
    analysis = QueryAnalysis(query="q", entities=names)
    return ch.ChannelInput(corpus=corpus, analysis=analysis, namespace="ns", session_id=None,
                           layers=(Layer.EPISODIC,), n=n, now=datetime(2024, 1, 1, tzinfo=UTC))


def test_the_entity_channel_counts_names_and_breaks_ties_in_order_of_first_mention() -> None:
    rng = np.random.default_rng(2)
    size = 400
    vectors = np.round(rng.standard_normal((size, 4)), 1).astype(np.float32)
    query = np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    entities = {"ann": sorted(rng.choice(size, 150, replace=False).tolist()),
                "bob": sorted(rng.choice(size, 90, replace=False).tolist()),
                "cat": [3, 3, 8, 9, 9, 40]}  # a memory naming two spellings of one name is listed twice
    for names in (["Ann"], ["Ann", "Bob"], ["Bob", "Ann", "Ann"], ["Cat"], ["Cat", "Bob"], ["Nobody"]):
        inp = _input(size, entities, names, n=12)
        inp.corpus.vectors = vectors
        got = ch.entity_channel(inp, ch.Similarity(vectors, query))
        # the former code: a dict of counts in order of first mention, a stable sort, the layer filter
        counts: dict[int, int] = {}
        for name in names:
            for i in entities.get(name.casefold(), []):
                counts[i] = counts.get(i, 0) + 1
        members = list(counts)
        scores = np.asarray([counts[i] for i in members], dtype=np.float64) + ch.Similarity(vectors, query)(members)
        order = sorted(range(len(members)), key=lambda j: -float(scores[j]))
        want = [f"m{members[j]}" for j in order if inp.allowed(members[j])][:12]
        assert [mid for mid, _ in got] == want
