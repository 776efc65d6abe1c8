"""A per-namespace snapshot of what recall searches: the memories, their vectors, a BM25 index.

Loading vectors and building BM25 cost milliseconds per thousand memories, far too much per query, and
rebuilding after every write made a recall right after a write cost seconds at 10k memories. The
snapshot now follows the change log (``hindsight_core/store/changes.py``): one index seek tells whether
the namespace changed, and new memories, the common case (a chat turn), are appended to the snapshot in
place of a rebuild. A memory that changed in what the snapshot holds, left it, or was deleted still
leads to a rebuild (rare: consolidation, sweep, forget). Appending makes a new ``Corpus`` that shares the
append-only parts (vector rows, keyword postings) with the old one, so a recall still running on the old
snapshot sees exactly the namespace it started with. Reinforcement does not count as a change: it
touches activation only, which recall reads fresh for its candidates."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hindsight_core.clock import to_ts
from hindsight_core.recall.floor import is_cjk
from hindsight_core.recall.keyword import KeywordIndex, KeywordView
from hindsight_core.recall.moments import VectorMoments
from hindsight_core.recall.profile import standing_kinds
from hindsight_core.store.changes import DELETED
from hindsight_core.store.sql import RelationalStore
from hindsight_core.text.entities import extract_entities
from hindsight_core.text.normalize import fingerprint
from hindsight_core.types import PERSISTENT_LAYERS, Layer, Memory, Status


@dataclass
class Corpus:
    key: tuple[object, ...]
    memories: list[Memory]
    vectors: np.ndarray  # (n, dim), rows aligned with ``memories``
    keyword: KeywordView
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
    #: Standing-fact kind → indexes of the memories stating it (ascending), so the profile channel
    #: reads its members instead of testing every memory.
    standing_index: dict[str, list[int]] = field(default_factory=dict)
    #: When each memory happened (epoch seconds), for the temporal channel's window and recency.
    occurred: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    #: Positions newest first (ties in snapshot order), and ``-occurred`` in that order (ascending), so
    #: a time window is two binary searches and "the latest memories" a prefix, not a sort.
    by_recency: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    recency_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    #: Mean and scatter of ``vectors``: the cosine channel's namespace-wide spread for any query.
    moments: VectorMoments | None = None
    #: Layers present, indexes of cold memories, whether the namespace holds superseded memories.
    layers: frozenset[Layer] = frozenset()
    cold: list[int] = field(default_factory=list)
    has_superseded: bool = False
    #: The change log's position this snapshot reflects, and the namespace's largest memory seq in it.
    change: int = 0
    max_seq: int = 0
    #: Append-only state shared by the snapshots of one namespace (see ``_Growth``).
    growth: _Growth | None = None

    @property
    def size(self) -> int:
        return len(self.memories)


class _Growth:
    """What successive snapshots of a namespace share and only ever append to: the vector rows (a
    buffer with spare capacity; each snapshot holds a view of its own rows), the keyword index, and the
    session bookkeeping that places the next turn next to its predecessor."""

    def __init__(self, vectors: np.ndarray, keyword: KeywordIndex, last_in_session: dict[str, int]) -> None:
        self.buffer = np.array(vectors, dtype=np.float32, copy=True)
        self.rows = len(vectors)
        self.keyword = keyword
        self.last_in_session = last_in_session
        self.lock = threading.Lock()

    def append_vectors(self, vectors: np.ndarray) -> np.ndarray:
        need = self.rows + len(vectors)
        if need > len(self.buffer):
            grown = np.zeros((max(need, 2 * len(self.buffer), 64), self.buffer.shape[1]), dtype=np.float32)
            grown[: self.rows] = self.buffer[: self.rows]
            self.buffer = grown
        self.buffer[self.rows : need] = vectors
        self.rows = need
        return self.buffer[:need]


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
        #: Point-in-time snapshots by (namespace, include_cold, as_of), see :meth:`as_of`.
        self._past: OrderedDict[tuple[str, bool, float], Corpus] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, namespace: str, include_cold: bool, vectors_for: VectorsFor) -> Corpus:
        key = (namespace, include_cold)
        change = self._store.latest_change(namespace)
        with self._lock:
            cached = self._items.get(key)
            if cached is not None:
                self._items.move_to_end(key)
        if cached is not None and cached.change == change:
            return cached
        corpus = self._extended(cached, namespace, include_cold, vectors_for) if cached is not None else None
        if corpus is None:
            corpus = self._build(namespace, include_cold, change, vectors_for)
        with self._lock:
            current = self._items.get(key)
            if current is None or current.change <= corpus.change:
                self._items[key] = corpus
                self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        return corpus

    def _extended(self, cached: Corpus, namespace: str, include_cold: bool,
                  vectors_for: VectorsFor) -> Corpus | None:
        """``cached`` with the memories written since appended, or ``None`` when a rebuild is needed:
        a memory of the snapshot changed or went, or a new one would not go at the end (seq order)."""
        growth = cached.growth
        if growth is None:
            return None
        with growth.lock:  # one extension at a time per namespace; a snapshot already extended is reused
            if growth.rows != cached.size:
                return None  # another snapshot grew from this one meanwhile: rebuild rather than fork
            latest, changed = self._store.changed_since(namespace, cached.change)
            if any(seq is None and (mid == DELETED or mid in cached.position) for mid, seq in changed):
                return None  # something was deleted (a deletion names no memory)
            ids = [mid for mid, seq in changed if seq is not None]
            rows = self._store.snapshot_rows(namespace, *_status_filter(include_cold), ids)
            present = {m.id for m in rows}
            seqs = dict(changed)
            fresh: list[Memory] = []
            replaced: dict[int, Memory] = {}
            for m in rows:
                i = cached.position.get(m.id)
                if i is None:
                    fresh.append(m)
                elif _same_for_recall(cached.memories[i], m):
                    replaced[i] = m
                else:
                    return None
            if any(mid in cached.position and mid not in present for mid in ids):
                return None  # left the snapshot (superseded, archived, unindexed)
            if fresh and min(seqs[m.id] or 0 for m in fresh) <= cached.max_seq:
                return None
            corpus = _append(cached, fresh, replaced, vectors_for, latest,
                             max([cached.max_seq, *(seqs[m.id] or 0 for m in fresh)]))
            return corpus  # a new memory that supersedes another changed that one: not this path

    def as_of(self, namespace: str, include_cold: bool, at: float, vectors_for: VectorsFor, model: str,
              embed: Callable[[list[str]], np.ndarray]) -> Corpus:
        """The snapshot as the namespace stood at ``at`` (``recall(as_of=...)``): memories created by then
        that were current then (active now, or superseded only later), each with the text it had then.
        Rebuilt whenever the namespace changed; the last few are kept, so paging through one moment's
        answers does not rebuild it each time. Today's texts use the cached vectors; an older text uses
        the vector kept with its edit, or is embedded (``embed``) when another model computed that."""
        key = (namespace, include_cold, at)
        change = self._store.latest_change(namespace)
        with self._lock:
            cached = self._past.get(key)
        if cached is not None and cached.change == change:
            return cached
        statuses, layers = _status_filter(include_cold)
        rows = self._store.snapshot_as_of(namespace, statuses, layers, at)
        texts = self._store.texts_as_of(namespace, at, model)
        stood: list[Memory] = []
        for m in rows:
            update: dict[str, object] = {}
            if m.status == Status.SUPERSEDED:
                update.update(status=Status.ACTIVE, superseded_by=None)
            if m.id in texts:
                text = texts[m.id][0]
                update.update(content=text, entities=extract_entities(text), fingerprint=fingerprint(text))
            stood.append(m.model_copy(update=update) if update else m)
        vectors = np.zeros((len(rows), vectors_for.dim), dtype=np.float32)
        today = [i for i, m in enumerate(rows) if m.id not in texts]
        if today:
            vectors[today] = vectors_for([rows[i] for i in today])
        missing = []
        for i, m in enumerate(rows):
            kept = texts[m.id][1] if m.id in texts else None
            if kept is not None:
                vectors[i] = kept
            elif m.id in texts:
                missing.append(i)
        if missing:
            vectors[missing] = embed([stood[i].content for i in missing])
        keyword = KeywordIndex([m.content for m in stood])
        growth = _Growth(vectors[:0], keyword, {})
        empty = Corpus(key=key, memories=[], vectors=growth.buffer[:0], keyword=keyword.view(0), change=change,
                       growth=growth)
        corpus = _append(empty, stood, {}, None, change, 0, vectors=vectors, indexed=True)
        corpus.growth = None  # a moment in the past is never extended
        with self._lock:
            self._past[key] = corpus
            self._past.move_to_end(key)
            while len(self._past) > 8:
                self._past.popitem(last=False)
        return corpus

    def _has_superseded(self, namespace: str) -> bool:
        return self._store.has_status(namespace, Status.SUPERSEDED.value)

    def invalidate(self, namespace: str | None = None) -> None:
        with self._lock:
            for key in list(self._items):
                if namespace is None or key[0] == namespace:
                    del self._items[key]
            for past in list(self._past):
                if namespace is None or past[0] == namespace:
                    del self._past[past]

    def _build(self, namespace: str, include_cold: bool, change: int, vectors_for: VectorsFor) -> Corpus:
        memories, max_seq = self._store.snapshot(namespace, *_status_filter(include_cold))
        vectors = vectors_for(memories)
        keyword = KeywordIndex([m.content for m in memories])
        growth = _Growth(vectors[:0], keyword, {})
        corpus = Corpus(
            key=(namespace, include_cold), memories=[], vectors=growth.buffer[:0], keyword=keyword.view(0),
            change=change, max_seq=max_seq, growth=growth,
        )
        built = _append(corpus, memories, {}, None, change, max_seq, vectors=vectors, indexed=True)
        built.has_superseded = self._has_superseded(namespace)
        return built


def _same_for_recall(old: Memory, new: Memory) -> bool:
    """Whether a changed memory's snapshot entry can simply be swapped (what the snapshot derives from
    it is the same); otherwise the namespace is rebuilt."""
    return (old.content == new.content and old.entities == new.entities and old.session_id == new.session_id
            and old.layer == new.layer and old.status == new.status and old.occurred_at == new.occurred_at)


def _append(
    cached: Corpus, fresh: Sequence[Memory], replaced: dict[int, Memory], vectors_for: VectorsFor | None,
    change: int, max_seq: int, *, vectors: np.ndarray | None = None, indexed: bool = False,
) -> Corpus:
    """A new snapshot: ``cached`` plus ``fresh`` memories at the end, ``replaced`` entries swapped.

    Lists and small arrays are copied (pointer copies: a snapshot in use stays as it was); vector rows
    and keyword postings are appended to the shared growth state. ``indexed``: the keyword index already
    holds ``fresh`` (a build)."""
    growth = cached.growth
    assert growth is not None
    n0 = cached.size
    if vectors is None:
        vectors = vectors_for(fresh) if vectors_for is not None and fresh else np.zeros((0, cached.vectors.shape[1]),
                                                                                           dtype=np.float32)
    all_vectors = growth.append_vectors(vectors) if len(fresh) else growth.buffer[: growth.rows]
    if not indexed:
        growth.keyword.extend([m.content for m in fresh])
    memories = list(cached.memories)
    for i, m in replaced.items():
        memories[i] = m
    memories += fresh
    n = len(memories)
    corpus = Corpus(
        key=cached.key, memories=memories, vectors=all_vectors[:n], keyword=growth.keyword.view(n),
        position=dict(cached.position) if fresh else cached.position, change=change, max_seq=max_seq,
        growth=growth,
    )
    for i, m in enumerate(fresh, start=n0):
        corpus.position[m.id] = i
    # entities: copy the lists a new memory extends, share the others
    corpus.entities = dict(cached.entities)
    corpus.entity_names = dict(cached.entity_names) if fresh else cached.entity_names
    touched: set[str] = set()
    for i, m in enumerate(fresh, start=n0):
        for name in m.entities:
            folded = name.casefold()
            if folded not in touched:
                corpus.entities[folded] = list(corpus.entities.get(folded, []))
                touched.add(folded)
            corpus.entities[folded].append(i)
            corpus.entity_names.setdefault(folded, name)
    neighbours = list(cached.neighbours)
    previous = np.full(n, -1, dtype=np.int64)
    previous[:n0] = cached.previous[:n0]
    following = np.full(n, -1, dtype=np.int64)
    following[:n0] = cached.following[:n0]
    for i, m in enumerate(fresh, start=n0):
        neighbours.append(())
        if m.session_id is None:
            continue
        prev = growth.last_in_session.get(m.session_id)
        if prev is not None:
            neighbours[i] = (prev,)
            neighbours[prev] = (*neighbours[prev], i)
            previous[i] = prev
            following[prev] = i
        growth.last_in_session[m.session_id] = i
    corpus.neighbours = neighbours
    corpus.previous, corpus.following = previous, following
    corpus.cjk = list(cached.cjk) + [is_cjk(m.content) for m in fresh]
    corpus.cjk_mask = np.concatenate([cached.cjk_mask[:n0], np.asarray(corpus.cjk[n0:], dtype=bool)])
    corpus.standing = list(cached.standing) + [standing_kinds(m.content) for m in fresh]
    corpus.standing_index = dict(cached.standing_index)
    for i in range(n0, n):
        for kind in corpus.standing[i]:
            corpus.standing_index[kind] = [*corpus.standing_index.get(kind, []), i]
    corpus.occurred = np.concatenate([cached.occurred[:n0], np.asarray([to_ts(m.occurred_at) for m in fresh],
                                                                        dtype=np.float64)])
    corpus.by_recency, corpus.recency_keys = _merged_recency(cached, corpus.occurred, n0)
    moments = cached.moments or VectorMoments.empty(corpus.vectors.shape[1])
    corpus.moments = moments.plus(vectors) if len(fresh) else moments
    corpus.layers = cached.layers | frozenset(m.layer for m in fresh)
    corpus.cold = list(cached.cold) + [i for i, m in enumerate(fresh, start=n0) if m.status == Status.COLD]
    corpus.has_superseded = cached.has_superseded
    return corpus


def _merged_recency(cached: Corpus, occurred: np.ndarray, n0: int) -> tuple[np.ndarray, np.ndarray]:
    """``cached``'s recency order with the rows from ``n0`` on merged in: what
    ``np.argsort(-occurred, kind="stable")`` gives, at the cost of the new rows (a new row sorts after
    an older one of the same time)."""
    if len(occurred) == n0:
        return cached.by_recency, cached.recency_keys
    new = np.arange(n0, len(occurred), dtype=np.int64)
    keys = -occurred[n0:]
    order = np.argsort(keys, kind="stable")
    new, keys = new[order], keys[order]
    at = np.searchsorted(cached.recency_keys, keys, side="right")
    return np.insert(cached.by_recency, at, new), np.insert(cached.recency_keys, at, keys)


class VectorsFor:
    """Callable giving the embedding matrix of a list of memories (cached vectors, computed if missing)."""

    def __init__(self, fetch: object, dim: int) -> None:
        self._fetch = fetch
        self.dim = dim

    def __call__(self, memories: Sequence[Memory]) -> np.ndarray:
        if not memories:
            return np.zeros((0, self.dim), dtype=np.float32)
        found = self._fetch(memories)  # type: ignore[operator]
        return np.stack([np.asarray(found[m.id], dtype=np.float32) for m in memories])
