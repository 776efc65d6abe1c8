"""A per-namespace snapshot of what recall searches: the memories, their vectors, a BM25 index.

Building BM25 and loading vectors costs milliseconds per thousand memories, far too much per query;
the snapshot is rebuilt only when the namespace's indexed memories change, which a single aggregate
query detects (count, newest row, latest update). Reinforcement does not count as a change: it
touches activation only, which recall reads fresh for its candidates."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hindsight_core.recall.floor import is_cjk
from hindsight_core.recall.keyword import KeywordIndex
from hindsight_core.recall.profile import standing_kinds
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import PERSISTENT_LAYERS, Layer, Memory, Status


@dataclass
class Corpus:
    key: tuple[object, ...]
    memories: list[Memory]
    vectors: np.ndarray  # (n, dim), rows aligned with ``memories``
    keyword: KeywordIndex
    position: dict[str, int] = field(default_factory=dict)
    #: Lower-cased entity → indexes of the memories that mention it.
    entities: dict[str, list[int]] = field(default_factory=dict)
    #: Lower-cased entity → the spelling first seen.
    entity_names: dict[str, str] = field(default_factory=dict)
    #: For each memory, the indexes of its neighbours in the same session (previous, next).
    neighbours: list[tuple[int, ...]] = field(default_factory=list)
    #: Whether each memory is mainly Chinese (the relevance floor compares within a language).
    cjk: list[bool] = field(default_factory=list)
    cjk_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: Index of the previous / next memory of the same session, -1 where there is none.
    previous: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    following: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: The standing-fact kinds each memory states (see profile.py).
    standing: list[tuple[str, ...]] = field(default_factory=list)
    #: Layers present, indexes of cold memories, whether the namespace holds superseded memories.
    layers: frozenset[Layer] = frozenset()
    cold: list[int] = field(default_factory=list)
    has_superseded: bool = False

    @property
    def size(self) -> int:
        return len(self.memories)


def _status_filter(include_cold: bool) -> tuple[list[str], list[str]]:
    """The statuses and layers a snapshot holds."""
    statuses = [Status.ACTIVE.value] + ([Status.COLD.value] if include_cold else [])
    return statuses, [layer.value for layer in PERSISTENT_LAYERS]


class CorpusCache:
    """Snapshots keyed by (namespace, include_cold), least recently used evicted first."""

    def __init__(self, store: RelationalStore, capacity: int = 32) -> None:
        self._store = store
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, bool], Corpus] = OrderedDict()
        self._lock = threading.Lock()

    def version(self, namespace: str, include_cold: bool) -> tuple[object, ...]:
        return self._store.snapshot_version(namespace, *_status_filter(include_cold))

    def get(self, namespace: str, include_cold: bool, vectors_for: VectorsFor) -> Corpus:
        key = (namespace, include_cold)
        version = self.version(namespace, include_cold)
        with self._lock:
            cached = self._items.get(key)
            if cached is not None and cached.key == version:
                self._items.move_to_end(key)
                return cached
        corpus = self._build(namespace, include_cold, version, vectors_for)
        with self._lock:
            self._items[key] = corpus
            self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        return corpus

    def invalidate(self, namespace: str | None = None) -> None:
        with self._lock:
            for key in list(self._items):
                if namespace is None or key[0] == namespace:
                    del self._items[key]

    def _build(self, namespace: str, include_cold: bool, version: tuple[object, ...],
               vectors_for: VectorsFor) -> Corpus:
        memories = self._store.snapshot(namespace, *_status_filter(include_cold))
        vectors = vectors_for(memories)
        corpus = Corpus(
            key=version,
            memories=memories,
            vectors=vectors,
            keyword=KeywordIndex([m.content for m in memories]),
            position={m.id: i for i, m in enumerate(memories)},
        )
        for i, m in enumerate(memories):
            for name in m.entities:
                corpus.entities.setdefault(name.casefold(), []).append(i)
                corpus.entity_names.setdefault(name.casefold(), name)
        last_in_session: dict[str | None, int] = {}
        neighbours: list[list[int]] = [[] for _ in memories]
        for i, m in enumerate(memories):
            if m.session_id is None:
                continue
            prev = last_in_session.get(m.session_id)
            if prev is not None:
                neighbours[i].append(prev)
                neighbours[prev].append(i)
            last_in_session[m.session_id] = i
        corpus.neighbours = [tuple(n) for n in neighbours]
        corpus.cjk = [is_cjk(m.content) for m in memories]
        corpus.cjk_mask = np.asarray(corpus.cjk, dtype=bool)
        corpus.previous = np.full(len(memories), -1, dtype=np.int64)
        corpus.following = np.full(len(memories), -1, dtype=np.int64)
        for i, around in enumerate(neighbours):
            for j in around:
                if j < i:
                    corpus.previous[i] = j
                else:
                    corpus.following[i] = j
        corpus.standing = [standing_kinds(m.content) for m in memories]
        corpus.layers = frozenset(m.layer for m in memories)
        corpus.cold = [i for i, m in enumerate(memories) if m.status == Status.COLD]
        corpus.has_superseded = self._store.has_status(namespace, Status.SUPERSEDED.value)
        return corpus


class VectorsFor:
    """Callable giving the embedding matrix of a list of memories (cached vectors, computed if missing)."""

    def __init__(self, fetch: object, dim: int) -> None:
        self._fetch = fetch
        self._dim = dim

    def __call__(self, memories: Sequence[Memory]) -> np.ndarray:
        if not memories:
            return np.zeros((0, self._dim), dtype=np.float32)
        found = self._fetch(memories)  # type: ignore[operator]
        return np.stack([np.asarray(found[m.id], dtype=np.float32) for m in memories])
