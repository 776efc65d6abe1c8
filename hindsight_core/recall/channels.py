"""Stage 2, the channels. Each is a plain function of its inputs returning ``[(memory_id, score)]``,
best first; they differ in what "relevant" means (meaning, words, time, names, heat)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from hindsight_core.activation.base import KEY_EPOCH, ActivationIndex, log_activation_from_key
from hindsight_core.clock import to_ts
from hindsight_core.recall.corpus import Corpus
from hindsight_core.recall.keyword import best_positive
from hindsight_core.recall.types import QueryAnalysis
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Layer
from hindsight_core.vectors.base import VectorIndex

Ranked = list[tuple[str, float]]


@dataclass
class ChannelInput:
    corpus: Corpus
    analysis: QueryAnalysis
    namespace: str
    session_id: str | None
    layers: tuple[Layer, ...]
    n: int
    now: datetime
    #: Whether every layer the snapshot holds is searched (the usual case): then every row is allowed,
    #: without reading its layer (the channels ask for each candidate they rank).
    everything: bool = field(init=False)

    def __post_init__(self) -> None:
        self.everything = self.corpus.layers <= frozenset(self.layers)

    def allowed(self, index: int) -> bool:
        return self.everything or self.corpus.memories.layer_at(index) in self.layers


class Similarity:
    """The query's cosine to snapshot rows, computed for the rows asked for only: a channel or the
    fusion reads its candidates' rows by position, never the whole namespace's."""

    def __init__(self, vectors: np.ndarray, query_vector: np.ndarray) -> None:
        self._vectors = vectors
        self._query = query_vector

    def __call__(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        return self._vectors[np.asarray(positions, dtype=np.intp)] @ self._query

    def everything(self) -> np.ndarray:
        return self._vectors @ self._query


def best_first(scores: np.ndarray, n: int, allowed: Callable[[int], bool]) -> list[int]:
    """The positions of the ``n`` best ``scores`` that ``allowed`` accepts, best first, ties in position
    order (the order a stable sort of every score gives). A partial sort picks a prefix of the best
    rows, and ``allowed`` runs on that prefix only; when it rejects too many (a layer filter on a
    namespace mostly of another layer), the prefix widens fourfold, so the cost stays that of numpy
    passes over the scores, not of a Python loop over the namespace."""
    size = len(scores)
    width = n
    while n > 0:
        if width < size:
            # every row scoring at least the width-th best: ties at the cut are all in, so the order
            # below is the full stable sort's
            cut = scores[np.argpartition(-scores, width - 1)[width - 1]]
            prefix = np.flatnonzero(scores >= cut)
        else:
            prefix = np.arange(size)
        ordered = prefix[np.argsort(-scores[prefix], kind="stable")]
        out: list[int] = []
        for i in ordered.tolist():
            if allowed(i):
                out.append(i)
                if len(out) >= n:
                    return out
        if width >= size:
            return out
        width *= 4
    return []


def _top(inp: ChannelInput, indexes: Sequence[int] | np.ndarray, scores: np.ndarray | Sequence[float]) -> Ranked:
    """The ``n`` best ``indexes`` by ``scores`` that the layer filter allows, ties in the order given
    (a stable sort's): a partial sort, since a set channel's members can be a large part of the
    namespace (a name every turn carries, a time window over a busy month)."""
    values = np.asarray(scores, dtype=np.float64)
    rows = np.asarray(indexes, dtype=np.int64)
    ids = inp.corpus.memories.id_at
    return [(ids(int(rows[j])), float(values[j]))
            for j in best_first(values, inp.n, lambda j: inp.allowed(int(rows[j])))]


def vector_channel(inp: ChannelInput, vectors: VectorIndex, query_vector: np.ndarray, similarity: Similarity,
                   scanned: Mapping[Layer, np.ndarray]) -> Ranked:
    """Nearest neighbours in each layer's collection, merged by cosine. A layer in ``scanned`` (its rows'
    positions in the snapshot: a layer the index keeps in a collection shared with other namespaces) is
    scored exactly from the snapshot instead, which holds what the index holds. Cold memories are out of
    the index by design; when asked for they are scored directly from their stored vectors."""
    hits: dict[str, float] = {}
    ids = inp.corpus.memories.id_at
    for layer in inp.layers:
        if layer not in inp.corpus.layers:
            continue  # an empty collection still costs a query
        rows = scanned.get(layer)
        if rows is not None:
            sims = similarity(rows)
            for j in best_first(sims, inp.n, _any):
                hits[ids(int(rows[j]))] = float(sims[j])
            continue
        for hit in vectors.query(inp.namespace, layer.value, query_vector, inp.n):
            if hit.memory_id in inp.corpus.position:
                hits[hit.memory_id] = max(hit.similarity, hits.get(hit.memory_id, -1.0))
    cold = [i for i in inp.corpus.cold if inp.allowed(i)]
    if cold:
        sims = inp.corpus.vectors[cold] @ query_vector
        for i, sim in zip(cold, sims, strict=True):
            hits[inp.corpus.memories.id_at(i)] = float(sim)
    return sorted(hits.items(), key=lambda kv: -kv[1])[: inp.n]


def _any(_: int) -> bool:
    return True


def keyword_channel(inp: ChannelInput, docs: np.ndarray, scores: np.ndarray) -> Ranked:
    """``docs``, ``scores``: the documents holding a query term, ascending, and their BM25 (the keyword
    index's sparse answer, also used by fusion). Only the positive scores are sorted (BM25 is never
    negative here): the order is the one a stable sort of every memory's score gives, at the cost of
    the matches rather than the namespace."""
    best = best_positive(scores, inp.n * 2)
    if inp.everything:  # already best first, ties in position order: the first n are the channel's
        ids = inp.corpus.memories.id_at
        return [(ids(i), s) for i, s in zip(docs[best[: inp.n]].tolist(), scores[best[: inp.n]].tolist(), strict=True)]
    return _top(inp, docs[best], scores[best])


def profile_channel(inp: ChannelInput, similarity: Similarity, kinds: set[str], offers: int) -> Ranked:
    """The ``offers`` standing facts of the requested ``kinds`` closest to the request (profile.py)."""
    if not kinds or offers <= 0:
        return []
    members: set[int] = set()
    for kind in kinds:
        members.update(inp.corpus.standing_index.get(kind, ()))
    indexes = sorted(members)
    return _top(inp, indexes, similarity(indexes))[:offers]


def temporal_channel(inp: ChannelInput, similarity: Similarity) -> Ranked:
    """Memories inside the query's time window; with a history cue, the namespace's latest memories
    (the previous session is where "last time" usually points). Ranked by meaning within that set."""
    corpus = inp.corpus
    parts: list[np.ndarray] = []
    window = inp.analysis.time_window
    if window is not None:
        # ``recency_keys`` is -occurred ascending: start <= occurred < end is a slice of it
        keys = corpus.recency_keys
        lo = int(np.searchsorted(keys, -to_ts(window.end), side="right"))
        hi = int(np.searchsorted(keys, -to_ts(window.start), side="right"))
        parts.append(np.asarray(corpus.by_recency[lo:hi], dtype=np.int64))
    if inp.analysis.history_cues:
        # The current session's own turns are already in the prompt (working memory): look before them.
        # Newest first, ties in snapshot order.
        wanted = inp.n * 2
        taken: list[int] = []
        for i in corpus.by_recency:
            session = corpus.memories.session_at(int(i))
            if session != inp.session_id or session is None:
                taken.append(int(i))
                if len(taken) >= wanted:
                    break
        parts.append(np.asarray(taken, dtype=np.int64))
    indexes = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    if not indexes.size:
        return []
    return _top(inp, indexes, similarity(indexes))


def entity_channel(inp: ChannelInput, similarity: Similarity) -> Ranked:
    """Memories that name an entity of the query; more shared entities first, then meaning."""
    found = [inp.corpus.entities.get(name.casefold()) for name in inp.analysis.entities]
    lists = [np.asarray(members, dtype=np.int64) for members in found if members]
    if not lists:
        return []
    if len(lists) == 1 and bool(np.all(lists[0][1:] > lists[0][:-1])):  # one name, each member once
        indexes, counts = lists[0], np.ones(lists[0].size, dtype=np.float64)
    else:  # each member once, in order of first mention, with how many of the names it carries
        every = np.concatenate(lists)
        unique, first, count = np.unique(every, return_index=True, return_counts=True)
        order = np.argsort(first)
        indexes, counts = unique[order], count[order].astype(np.float64)
    return _top(inp, indexes, counts + similarity(indexes))


def activation_channel(inp: ChannelInput, activation: ActivationIndex, rates: dict[Layer, float]) -> Ranked:
    """The namespace's hottest memories right now: recently and often used, important."""
    now = to_ts(inp.now)
    merged: dict[str, float] = {}
    for layer in inp.layers:
        if layer not in inp.corpus.layers:
            continue
        for memory_id, key in activation.top(inp.namespace, layer.value, inp.n):
            if memory_id in inp.corpus.position:
                merged[memory_id] = log_activation_from_key(key, rates[layer], now)
    return sorted(merged.items(), key=lambda kv: -kv[1])[: inp.n]


# -- degraded twins: the same rankings from what the relational store and the snapshot hold -----------
def activation_from_store(inp: ChannelInput, store: RelationalStore, rates: dict[Layer, float]) -> Ranked:
    """The activation channel while its index is unreachable: each memory row holds its activation, and
    ordering by the same key expression in SQL gives the index's order."""
    now = to_ts(inp.now)
    merged: dict[str, float] = {}
    for layer in inp.layers:
        if layer not in inp.corpus.layers:
            continue
        rate = rates[layer]
        for memory_id, key in store.by_activation_key(inp.namespace, layer.value, rate, KEY_EPOCH, inp.n):
            if memory_id in inp.corpus.position:
                merged[memory_id] = log_activation_from_key(float(key), rate, now)
    return sorted(merged.items(), key=lambda kv: -kv[1])[: inp.n]


def vector_from_snapshot(inp: ChannelInput, similarity: Similarity) -> Ranked:
    """The vector channel as an exact scan of the snapshot's vectors, which is what the index
    approximates: one matrix-vector product and a partial sort. It serves a namespace small enough that
    the product costs less than an index query (``exact_vector_max_memories``), a point-in-time recall
    (``as_of``: the index holds today's memories) and an index outage. The snapshot holds the
    namespace's active memories, and its cold ones when they are asked for: the rows the index path
    ranks (cold memories are scored from their stored vectors there too)."""
    scores = similarity.everything()
    return [(inp.corpus.memories.id_at(i), float(scores[i])) for i in best_first(scores, inp.n, inp.allowed)]


def activation_from_snapshot(inp: ChannelInput, rates: dict[Layer, float]) -> Ranked:
    """The activation channel of a point-in-time recall (``as_of``): the index ranks today's memories,
    so the snapshot's own rows (the memories as they stood) are ranked by their activation at ``now``."""
    now = to_ts(inp.now)
    scored = [(m.id, m.activation.log_at(now, rates[m.layer])) for m in inp.corpus.memories if m.layer in inp.layers]
    return sorted(scored, key=lambda kv: -kv[1])[: inp.n]
