"""``recall(explain=True)``: every stage's view of a recall, without changing its answer; and
``recall(track=False)``: a look at what recall would inject that logs and reinforces nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core import Hindsight, InvalidInputError
from hindsight_core.recall.pipeline import CHANNELS

from .conftest import NOW, Clock, record_history

NS = "user:wang"
QUERIES = [
    "帮我推荐个餐厅吧", "What did we decide about the renovation?", "Lily's violin lessons",
    "quantum chromodynamics lattice",
]


def _engine(path: Path, embedder: object) -> Iterator[Hindsight]:
    engine = Hindsight(path, clock=Clock(NOW), embedder=embedder)  # type: ignore[arg-type]
    record_history(engine, NS)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def hs(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Iterator[Hindsight]:
    """Shared: these tests recall with ``track=False``, which (as tested here) changes nothing."""
    yield from _engine(tmp_path_factory.mktemp("trace") / "data", embedder)


@pytest.fixture
def own(tmp_path: Path, embedder: object) -> Iterator[Hindsight]:
    yield from _engine(tmp_path / "data", embedder)


def _state(hs: Hindsight) -> tuple[object, ...]:
    hs.flush_recall_log()
    memories = {m.id: (m.activation, m.access_count) for m in hs.find(NS)}
    return memories, hs.store.query("SELECT COUNT(*) FROM recall_log")[0][0]


@pytest.mark.parametrize("query", QUERIES)
def test_explain_leaves_the_result_as_it_is(hs: Hindsight, query: str) -> None:
    plain = hs.recall(query, NS, track=False)
    explained = hs.recall(query, NS, explain=True, track=False)
    assert plain.trace is None and explained.trace is not None
    assert explained.model_dump(exclude={"trace"}) == plain.model_dump(exclude={"trace"})
    assert explained.to_prompt() == plain.to_prompt()


@pytest.mark.parametrize("query", QUERIES)
def test_trace_agrees_with_the_hits(hs: Hindsight, query: str) -> None:
    result = hs.recall(query, NS, explain=True, track=False)
    trace = result.trace
    assert trace is not None and trace.corpus_size > 0
    assert set(trace.channels) == set(CHANNELS)
    for ranked in trace.channels.values():
        assert [c.rank for c in ranked] == list(range(1, len(ranked) + 1))
    # every hit's per-channel scores are its entries in the channels' lists
    for hit in result.hits:
        for name, score in hit.channels.items():
            assert any(c.id == hit.memory.id and c.score == score for c in trace.channels[name])
    fused = [c.score for c in trace.fused]
    assert fused == sorted(fused, reverse=True)
    assert [d.id for d in trace.floor] == [c.id for c in trace.fused]
    kept = {d.id for d in trace.floor if d.kept}
    assert {f.id for f in trace.final} == kept
    assert [f.id for f in trace.final if f.injected] == [h.memory.id for h in result.hits]
    assert [f.score for f in trace.final if f.injected] == [h.score for h in result.hits]
    for d in trace.floor:
        if d.kept and not (d.standing or d.in_window or (d.rerank or 0) >= 0.5):
            assert d.strength >= trace.keep_bar
    assert bool(result.hits) == (trace.anchored and bool(kept))


def test_an_irrelevant_query_is_traced_as_refused(hs: Hindsight) -> None:
    result = hs.recall("quantum chromodynamics lattice", NS, explain=True, track=False)
    assert result.hits == [] and result.to_prompt() == ""
    assert result.trace is not None and result.trace.fused
    assert not any(d.kept for d in result.trace.floor) and result.trace.final == []


def test_a_relevant_query_is_traced_as_kept(hs: Hindsight) -> None:
    result = hs.recall("帮我推荐个餐厅吧", NS, explain=True, track=False)
    assert "花生" in result.to_prompt()
    trace = result.trace
    assert trace is not None and trace.anchored
    (allergy,) = [h for h in result.hits if "花生过敏" in h.memory.content][:1]
    assert next(d for d in trace.floor if d.id == allergy.memory.id).kept


def test_empty_namespace_has_an_empty_trace(hs: Hindsight) -> None:
    result = hs.recall("anything at all", "user:nobody", explain=True, track=False)
    assert result.hits == [] and result.trace is not None and result.trace.corpus_size == 0


def test_track_false_logs_and_reinforces_nothing_and_true_does(own: Hindsight) -> None:
    hs = own
    before = _state(hs)
    for query in QUERIES:
        hs.recall(query, NS, track=False)
        hs.recall(query, NS, explain=True, track=False)
    assert _state(hs) == before
    result = hs.recall("帮我推荐个餐厅吧", NS, explain=True)
    assert result.hits
    memories, logged = _state(hs)
    assert logged == before[1] + 1  # type: ignore[operator]
    assert memories != before[0]


@pytest.mark.parametrize("flag", ["explain", "track"])
def test_flags_must_be_bools(hs: Hindsight, flag: str) -> None:
    before = _state(hs)
    with pytest.raises(InvalidInputError, match=flag):
        hs.recall("restaurants", NS, **{flag: "yes"})  # type: ignore[arg-type]
    assert _state(hs) == before


@pytest.mark.parametrize("query", [*QUERIES, "上次我们说的那家餐厅叫什么？", "What did we talk about last week?",
                                   "What happened this year?"])
def test_the_temporal_channel_has_members_only_with_a_history_cue_or_a_time_expression(hs: Hindsight,
                                                                                       query: str) -> None:
    """Why ``channel_weights["temporal"]`` is one constant: the channel is empty unless the query carries a
    history cue or a time expression, which is when the retired ``history_boost`` multiplied its weight."""
    result = hs.recall(query, NS, explain=True, track=False)
    assert result.trace is not None
    routed = bool(result.analysis.history_cues) or result.analysis.time_window is not None
    members = result.trace.channels.get("temporal", [])
    assert bool(members) == routed, (query, result.analysis)
    assert result.trace.weights["temporal"] == hs.config.recall.channel_weights["temporal"]
