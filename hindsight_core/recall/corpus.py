"""A per-namespace snapshot of what recall searches: the memories, their vectors, a BM25 index.

Loading vectors and building BM25 cost milliseconds per thousand memories, far too much per query, and
rebuilding after every write made a recall right after a write cost seconds at 10k memories. The
snapshot now follows the change log (``hindsight_core/store/changes.py``): one index seek tells whether
the namespace changed, and new memories, the common case (a chat turn), are appended to the snapshot in
place of a rebuild. A memory that changed in what the snapshot holds, left it, or was deleted still
leads to a rebuild (rare: consolidation, sweep, forget). Appending makes a new ``Corpus`` that shares
its storage with the old one (``growing.py``: everything is appended to, and each snapshot holds views
bounded by its own row count), so it costs the new rows, and a recall still running on the old snapshot
sees exactly the namespace it started with. Reinforcement does not count as a change: it
touches activation only, which recall reads fresh for its candidates.

Building is still linear Python work (about 10 s at 100k memories), so large snapshots are also kept on
disk (``snapshot_file.py``): the next process loads the arrays as memory maps (:func:`restore`) and
extends them from the change log like any cached snapshot. Everything a snapshot holds must therefore
be in :func:`columns` and :func:`restore` (``tests/recall/test_snapshot_file.py`` compares a loaded
snapshot with a built one field by field)."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from hindsight_core.clock import from_ts, to_ts
from hindsight_core.recall.growing import GrowingArray, GrowingList, GrowingMap, ListView, Positions, members_below
from hindsight_core.recall.keyword import KeywordIndex, KeywordView
from hindsight_core.recall.moments import VectorMoments
from hindsight_core.recall.snapshot_file import SnapshotFiles
from hindsight_core.store.changes import DELETED
from hindsight_core.store.sql import RelationalStore
from hindsight_core.text.entities import extract_entities
from hindsight_core.text.normalize import fingerprint
from hindsight_core.text.script import is_cjk
from hindsight_core.types import PERSISTENT_LAYERS, Layer, Memory, Status

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass
class Corpus:
    key: tuple[object, ...]
    memories: MemoryRows
    vectors: np.ndarray  # (n, dim), rows aligned with ``memories``
    keyword: KeywordView
    position: Mapping[str, int] = field(default_factory=dict)
    #: Lower-cased entity → indexes of the memories that mention it.
    entities: Mapping[str, list[int]] = field(default_factory=dict)
    #: Lower-cased entity → the spelling first seen.
    entity_names: Mapping[str, str] = field(default_factory=dict)
    #: For each memory, the indexes of its neighbours in the same session (previous, next).
    neighbours: Sequence[tuple[int, ...]] = ()
    #: Whether each memory is mainly Chinese (the relevance floor compares within a language).
    cjk: Sequence[bool] = field(default_factory=list)
    cjk_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: Index of the previous / next memory of the same session, -1 where there is none.
    previous: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    following: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Whether each memory's ``previous`` turn was said by another speaker (a different ``role``; a
    #: missing role counts as another), False where there is no previous turn. Recall's context share
    #: crosses only such pairs (fusion.py: a reply depends on what it answers, a speaker's next
    #: statement does not).
    reply: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: The standing-fact kinds each memory states (see profile.py, ``StandingOf``).
    standing: Sequence[tuple[str, ...]] = field(default_factory=list)
    #: Standing-fact kind → indexes of the memories stating it (ascending), so the profile channel
    #: reads its members instead of testing every memory.
    standing_index: Mapping[str, list[int]] = field(default_factory=dict)
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
    #: Each memory's layer as its number in ``LAYER_CODES`` (:meth:`rows_of`).
    layer_codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    cold: Sequence[int] = field(default_factory=list)
    has_superseded: bool = False
    #: The change log's position this snapshot reflects, and the namespace's largest memory seq in it.
    change: int = 0
    max_seq: int = 0
    #: Append-only state shared by the snapshots of one namespace (see ``_Growth``).
    growth: _Growth | None = None
    #: The snapshot files' generation of the namespace when this snapshot was read (-1: never save it).
    generation: int = -1

    @property
    def size(self) -> int:
        return len(self.memories)

    def prompting_turn(self, i: int, is_answer: Callable[[int], bool], role_of: Callable[[int], str | None]
                       ) -> int | None:
        """The turn memory ``i`` replies to, when ``i`` cannot carry its meaning alone.

        A bare answer ("Hill", "绵阳", "Yes, two cats.", "The one near the station.") is understood only with
        the turn before it ("what is your mother's maiden name?"): on its own its vector says almost nothing
        of the question, so the query matches the question and never the answer. Such a reply takes the
        evidence of the previous turn of its session when another speaker said that turn. ``is_answer``
        reads a position as a bare answer rather than a statement that stands alone (the classifier
        ``sentence_kinds.SentenceKinds.answer``; the caller also asks that the turn before be a question);
        a reply with no keyword terms ("no", "是的") says nothing to take. Both must be episodes: a distilled
        fact shares its last episode's session but is nobody's turn. ``role_of`` reads a position's role
        (rows of a loaded snapshot are read from the store)."""
        before = int(self.previous[i])
        if before < 0 or not is_answer(i) or not self.keyword.terms[i]:  # the cheapest tests first
            return None
        if not self.memories.layer_at(i) == self.memories.layer_at(before) == Layer.EPISODIC:
            return None
        return before if role_of(before) != role_of(i) else None

    def rows_of(self, layer: Layer) -> np.ndarray:
        """Positions of the memories of ``layer``, ascending (one pass over a byte per memory)."""
        return np.flatnonzero(self.layer_codes[: self.size] == _LAYER_CODE[layer])

    @property
    def key_pair(self) -> tuple[str, bool]:
        namespace, include_cold = self.key[0], self.key[1]
        assert isinstance(namespace, str) and isinstance(include_cold, bool)
        return namespace, include_cold


class _Growth:
    """What successive snapshots of a namespace share and only ever append to (``growing.py``): the
    vector rows, the keyword index, the per-memory lists and arrays, the position and entity maps, and
    the session bookkeeping that places the next turn next to its predecessor. Each snapshot holds views
    of its own rows; ``lock`` serialises the writers (one extension at a time per namespace)."""

    def __init__(self, vectors: np.ndarray, keyword: KeywordIndex, *, ids: Sequence[str] = (),
                 previous: np.ndarray | None = None, occurred: np.ndarray | None = None,
                 reply: np.ndarray | None = None, cjk: Sequence[bool] = (), standing: Sequence[tuple[str, ...]] = (),
                 entities: dict[str, list[int]] | None = None, entity_names: dict[str, str] | None = None,
                 standing_index: dict[str, list[int]] | None = None, last_in_session: dict[str, int] | None = None,
                 cold: Sequence[int] = (), layer_codes: np.ndarray | None = None) -> None:
        self.vectors = GrowingArray(vectors)
        self.keyword = keyword
        self.ids: GrowingList[str] = GrowingList(ids)
        self.index: dict[str, int] = dict(zip(ids, range(len(ids)), strict=True))
        self.previous = GrowingArray(previous if previous is not None else np.zeros(0, dtype=np.int64))
        self.occurred = GrowingArray(occurred if occurred is not None else np.zeros(0, dtype=np.float64))
        self.reply = GrowingArray(reply if reply is not None else np.zeros(0, dtype=bool))
        self.cjk: GrowingList[bool] = GrowingList(cjk)
        self.cjk_mask = GrowingArray(np.asarray(cjk, dtype=bool))
        self.layer_codes = GrowingArray(layer_codes if layer_codes is not None else np.zeros(0, dtype=np.uint8))
        self.standing: GrowingList[tuple[str, ...]] = GrowingList(standing)
        self.entities: GrowingMap[list[int]] = GrowingMap(entities)
        self.entity_names: GrowingMap[str] = GrowingMap(entity_names)
        self.standing_index: GrowingMap[list[int]] = GrowingMap(standing_index)
        self.last_in_session: GrowingMap[int] = GrowingMap(last_in_session)
        self.cold: GrowingList[int] = GrowingList(cold)
        self.lock = threading.Lock()

    @property
    def rows(self) -> int:
        return self.vectors.size

    def last_in_session_below(self, size: int) -> dict[str, int]:
        """Each session's last row among the first ``size``: what ``last_in_session`` was when the
        snapshot of ``size`` rows was made (a later turn's ``previous`` leads back to it)."""
        out: dict[str, int] = {}
        for session in self.last_in_session.keys[:]:
            i = self.last_in_session.values[session]
            previous = self.previous.view()
            while i >= size:
                i = int(previous[i])
            if i >= 0:
                out[session] = i
        return out


#: A snapshot is saved again once this many memories (or a tenth of its size, if more) were appended.
_SAVE_EVERY = 1000


def _status_filter(include_cold: bool) -> tuple[list[str], list[str]]:
    """The statuses and layers a snapshot holds."""
    statuses = [Status.ACTIVE.value] + ([Status.COLD.value] if include_cold else [])
    return statuses, [layer.value for layer in PERSISTENT_LAYERS]


class CorpusCache:
    """Snapshots keyed by (namespace, include_cold), least recently used evicted first; with ``files``,
    snapshots of at least ``file_min`` memories are also kept on disk for the next process
    (``snapshot_file.py``): saved when built, when they grew by a tenth since the last save, and on
    :meth:`close`."""

    def __init__(self, store: RelationalStore, standing_of: StandingOf, capacity: int = 32,
                 files: SnapshotFiles | None = None, file_min: int = 2000) -> None:
        self._store = store
        self._standing_of = standing_of
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, bool], Corpus] = OrderedDict()
        #: Point-in-time snapshots by (namespace, include_cold, as_of), see :meth:`as_of`.
        self._past: OrderedDict[tuple[str, bool, float], Corpus] = OrderedDict()
        self._lock = threading.Lock()
        self._files = files
        self._file_min = file_min
        #: (change, size) of the file each key's snapshot was last saved to or loaded from.
        self._on_disk: dict[tuple[str, bool], tuple[int, int]] = {}
        #: Snapshots waiting to be saved (with whether each was built), and the thread saving them.
        self._saves = threading.Condition()
        self._queued: dict[tuple[str, bool], tuple[Corpus, bool]] = {}
        self._saver: threading.Thread | None = None

    def get(self, namespace: str, include_cold: bool, vectors_for: VectorsFor) -> Corpus:
        key = (namespace, include_cold)
        generation = self._files.generation(namespace) if self._files is not None else 0  # before any read
        change = self._store.latest_change(namespace)
        with self._lock:
            cached = self._items.get(key)
            if cached is not None:
                self._items.move_to_end(key)
        if cached is not None and cached.change == change:
            return cached
        if cached is None:
            cached = self._load(namespace, include_cold, change, generation)
        corpus = cached
        if cached is not None and cached.change != change:
            corpus = self._extended(cached, namespace, include_cold, vectors_for)
            if corpus is not None:
                corpus.generation = generation if cached.generation == generation else -1
        built = corpus is None
        if corpus is None:
            corpus = self._build(namespace, include_cold, change, vectors_for)
            corpus.generation = generation
        with self._lock:
            current = self._items.get(key)
            if current is None or current.change <= corpus.change:
                self._items[key] = corpus
                self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        self._persist(corpus, built)
        return corpus

    def _lighter(self, built: Corpus) -> None:
        """A snapshot just built and saved, swapped in the cache for its file's version: the same
        content, with the memories read from the store on demand instead of held (the built one holds
        every row). When writes already extended the built one, the file's version (older) is swapped
        in all the same: the next recall extends it from the change log."""
        namespace, include_cold = built.key_pair
        loaded = self._load(namespace, include_cold, built.change, built.generation)
        if loaded is None or loaded.change != built.change:
            return
        with self._lock:
            current = self._items.get(built.key_pair)
            if current is not None and current.growth is built.growth:
                self._items[built.key_pair] = loaded

    def _fetcher(self, namespace: str) -> Callable[[Sequence[str]], dict[str, Memory]]:
        store = self._store
        return lambda ids: store.get_many_in(namespace, ids)

    # -- the files ------------------------------------------------------------------------------------
    def _load(self, namespace: str, include_cold: bool, change: int, generation: int) -> Corpus | None:
        """The namespace's snapshot from its file, when there is a trustworthy one not ahead of the store
        (a store restored to an earlier state makes the file a stranger)."""
        if self._files is None:
            return None
        fetch = self._fetcher(namespace)
        corpus = self._files.load(
            namespace, include_cold, lambda values, arrays: restore(namespace, include_cold, fetch, values, arrays)
        )
        if corpus is None or corpus.change > change:
            return None
        corpus.generation = generation
        with self._saves:
            self._on_disk[corpus.key_pair] = (corpus.change, corpus.size)
        return corpus

    def _persist(self, corpus: Corpus, built: bool, *, closing: bool = False) -> None:
        """Queue ``corpus`` for saving when it is worth it: built, grown by a tenth since its file, or
        (``closing``) newer than its file. Saving takes seconds at 100k memories (columns, write,
        fsync), so it runs in the background, from the snapshot's own views; a snapshot queued for
        the same namespace replaces the older one still waiting."""
        small = corpus.size < max(self._file_min, 1)  # an empty namespace leaves no file to erase
        if self._files is None or small or corpus.generation < 0 or corpus.growth is None:
            return
        key = corpus.key_pair
        with self._saves:
            queued = self._queued.get(key)
            on_disk = (queued[0].change, queued[0].size) if queued is not None else self._on_disk.get(key)
            if on_disk is not None and on_disk[0] == corpus.change:
                return
            grown = on_disk is None or corpus.size - on_disk[1] >= max(_SAVE_EVERY, on_disk[1] // 10)
            if not (built or grown or closing):
                return
            self._queued[key] = (corpus, built or (queued is not None and queued[1]))
            if self._saver is None:
                self._saver = threading.Thread(target=self._save_queued, name="hindsight-snapshot-save", daemon=True)
                self._saver.start()

    def _save_queued(self) -> None:
        while True:
            with self._saves:
                if not self._queued:
                    self._saver = None
                    self._saves.notify_all()
                    return
                key = next(iter(self._queued))
                corpus, built = self._queued.pop(key)
            try:
                if self._save(corpus) and built:
                    self._lighter(corpus)
            except Exception:  # a cache: a failed save costs the next cold start, not a recall
                log.exception("recall snapshot of %r not saved", key[0])

    def _save(self, corpus: Corpus) -> bool:
        assert self._files is not None
        values, arrays = columns(corpus)
        namespace, include_cold = corpus.key_pair
        if not self._files.save(namespace, include_cold, corpus.generation, values, arrays):
            return False
        with self._saves:
            on_disk = self._on_disk.get(corpus.key_pair)
            if on_disk is None or on_disk[0] <= corpus.change:
                self._on_disk[corpus.key_pair] = (corpus.change, corpus.size)
        return True

    def wait_for_saves(self) -> None:
        """Return once every queued save is written (or refused)."""
        with self._saves:
            while self._saver is not None:
                self._saves.wait()

    def close(self) -> None:
        """Save the snapshots that moved on since their files (the next process extends less), and
        wait for every save."""
        with self._lock:
            corpora = list(self._items.values())
        for corpus in corpora:
            self._persist(corpus, False, closing=True)
        self.wait_for_saves()

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
            retimed: dict[int, float] = {}
            for m in rows:
                i = cached.position.get(m.id)
                if i is None:
                    fresh.append(m)
                elif cached.memories.same_for_recall(i, m):
                    replaced[i] = m
                elif cached.memories.retimed(i, m, float(cached.occurred[i])):
                    replaced[i], retimed[i] = m, to_ts(m.occurred_at)
                else:
                    return None
            if any(mid in cached.position and mid not in present for mid in ids):
                return None  # left the snapshot (superseded, archived, unindexed)
            if fresh and min(seqs[m.id] or 0 for m in fresh) <= cached.max_seq:
                return None
            corpus = _append(cached, fresh, replaced, vectors_for, latest,
                             max([cached.max_seq, *(seqs[m.id] or 0 for m in fresh)]),
                             standing_of=self._standing_of, retimed=retimed)
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
        growth = _Growth(vectors[:0], keyword)
        empty = Corpus(key=key, memories=MemoryRows(namespace, _nothing), vectors=growth.vectors.view(),
                       keyword=keyword.view(0), change=change, growth=growth)
        corpus = _append(empty, stood, {}, None, change, 0, standing_of=self._standing_of, vectors=vectors,
                         indexed=True)
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
        with self._saves:
            for saved in list(self._on_disk):
                if namespace is None or saved[0] == namespace:
                    del self._on_disk[saved]
            for queued in list(self._queued):
                if namespace is None or queued[0] == namespace:
                    del self._queued[queued]

    def _build(self, namespace: str, include_cold: bool, change: int, vectors_for: VectorsFor) -> Corpus:
        memories, max_seq = self._store.snapshot(namespace, *_status_filter(include_cold))
        vectors = vectors_for(memories)
        keyword = KeywordIndex([m.content for m in memories])
        growth = _Growth(vectors[:0], keyword)
        corpus = Corpus(
            key=(namespace, include_cold), memories=MemoryRows(namespace, self._fetcher(namespace)),
            vectors=growth.vectors.view(), keyword=keyword.view(0), change=change, max_seq=max_seq, growth=growth,
        )
        built = _append(corpus, memories, {}, None, change, max_seq, standing_of=self._standing_of,
                        vectors=vectors, indexed=True)
        built.has_superseded = self._has_superseded(namespace)
        return built


def _same_for_recall(old: Memory, new: Memory) -> bool:
    """Whether a changed memory's snapshot entry can simply be swapped (what the snapshot derives from
    it is the same); otherwise the namespace is rebuilt."""
    return (old.content == new.content and old.entities == new.entities and old.session_id == new.session_id
            and old.role == new.role and old.layer == new.layer and old.status == new.status
            and old.occurred_at == new.occurred_at)


def recall_digest(m: Memory) -> int:
    """64 bits of what :func:`_same_for_recall` compares, for memories a persisted snapshot knows by id
    only."""
    text = "\x1f".join((m.content, "\x1e".join(m.entities), m.session_id or "\x00", m.role or "\x00", m.layer.value,
                         m.status.value, repr(to_ts(m.occurred_at))))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _nothing(ids: Sequence[str]) -> dict[str, Memory]:
    return {}


#: Layers by their number in a persisted snapshot.
LAYER_CODES: tuple[Layer, ...] = tuple(Layer)
_LAYER_CODE = {layer: code for code, layer in enumerate(LAYER_CODES)}


class MemoryRows(Sequence[Memory]):
    """The snapshot's memories by position.

    Memories the snapshot was built from or extended with are held as they were read. Those of a
    snapshot loaded from its file (``snapshot_file.py``) are known by id, layer and a digest of what
    recall derives from them (:func:`recall_digest`), and are read from the store the first time a
    recall looks at one: recall reads the fresh rows of its candidates anyway, and 100k pydantic
    objects cost 3.4 s to load and most of the snapshot's memory. Read rows are kept (the most
    recent :attr:`KEPT`, shared by the snapshots that grow from one another); a memory deleted
    meanwhile reads as a stand-in without content, which the fresh-row check then drops."""

    KEPT = 20_000

    def __init__(
        self,
        namespace: str,
        fetch: Callable[[Sequence[str]], dict[str, Memory]],
        ids: Sequence[str] = (),
        layers: np.ndarray | None = None,
        digests: np.ndarray | None = None,
        sessions: tuple[np.ndarray, Sequence[str]] | None = None,
        *,
        appended: GrowingList[Memory] | None = None,
        overrides: dict[int, Memory] | None = None,
        read: dict[str, Memory] | None = None,
        lock: threading.Lock | None = None,
    ) -> None:
        self.namespace = namespace
        self._fetch = fetch
        self._ids = ids
        self._base = len(ids)
        self._layers = layers if layers is not None else np.zeros(0, dtype=np.uint8)
        self._digests = digests if digests is not None else np.zeros(0, dtype=np.uint64)
        #: Each loaded position's session: a number into the names, -1 for none.
        self._sessions = sessions if sessions is not None else (np.zeros(0, dtype=np.int32), ())
        #: The memories appended after the loaded ones, shared with the successors (each sees its own
        #: count), with the ones an update replaced in this snapshot.
        self._appended: GrowingList[Memory] = appended if appended is not None else GrowingList()
        self._tail: ListView[Memory] = self._appended.view(overrides)
        self._read: dict[str, Memory] = read if read is not None else {}
        self._lock = lock or threading.Lock()

    def __len__(self) -> int:
        return self._base + len(self._tail)

    @typing.overload
    def __getitem__(self, i: int) -> Memory: ...
    @typing.overload
    def __getitem__(self, i: slice) -> list[Memory]: ...
    def __getitem__(self, i: int | slice) -> Memory | list[Memory]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self)
        if i >= self._base:
            return self._tail[i - self._base]
        if i < 0:
            raise IndexError(i)
        found = self._read.get(self._ids[i])
        return found if found is not None else self._read_rows([i])[0][0]

    def many(self, positions: Sequence[int]) -> list[Memory]:
        """``[self[i] for i in positions]``, the loaded rows not read yet fetched in one call."""
        return self.many_read(positions)[0]

    def many_read(self, positions: Sequence[int]) -> tuple[list[Memory], dict[str, Memory]]:
        """:meth:`many`, and the rows this call read from the store (those still stored): a recall need not
        ask the store again for what such a row already holds."""
        unread = [i for i in positions if 0 <= i < self._base and self._ids[i] not in self._read]
        fetched = self._read_rows(unread)[1] if unread else {}
        return [self[i] for i in positions], fetched

    def _read_rows(self, positions: Sequence[int]) -> tuple[list[Memory], dict[str, Memory]]:
        ids = [self._ids[i] for i in positions]
        fetched = self._fetch(ids)
        found = [fetched.get(mid) or Memory.model_construct(
            id=mid, namespace=self.namespace, layer=LAYER_CODES[int(self._layers[i])], content="", session_id=None)
            for mid, i in zip(ids, positions, strict=True)]
        with self._lock:
            self._read.update(zip(ids, found, strict=True))
            while len(self._read) > self.KEPT:
                del self._read[next(iter(self._read))]
        return found, fetched

    # what the channels read of every candidate, without reading its row
    def id_at(self, i: int) -> str:
        return self._ids[i] if i < self._base else self._tail[i - self._base].id

    def layer_at(self, i: int) -> Layer:
        return LAYER_CODES[int(self._layers[i])] if i < self._base else self._tail[i - self._base].layer

    def session_at(self, i: int) -> str | None:
        if i >= self._base:
            return self._tail[i - self._base].session_id
        code = int(self._sessions[0][i])
        return None if code < 0 else self._sessions[1][code]

    def __iter__(self) -> Iterator[Memory]:
        for i in range(len(self)):
            yield self[i]

    def extended(self, fresh: Sequence[Memory], replaced: dict[int, Memory]) -> MemoryRows:
        """These rows plus ``fresh`` at the end, ``replaced`` swapped in (the rows here stay as they are:
        fresh rows go beyond their count, a replaced row into the new rows' overrides). Only the latest
        rows of a growth state are extended."""
        assert len(self._tail) == len(self._appended)
        overrides = dict(self._tail.overrides)
        for i, m in replaced.items():
            if i >= self._base:
                overrides[i - self._base] = m
            else:
                with self._lock:
                    self._read[m.id] = m
        self._appended.extend(fresh)
        return MemoryRows(self.namespace, self._fetch, self._ids, self._layers, self._digests, self._sessions,
                          appended=self._appended, overrides=overrides, read=self._read, lock=self._lock)

    def same_for_recall(self, i: int, new: Memory) -> bool:
        if i >= self._base:
            return _same_for_recall(self._tail[i - self._base], new)
        return int(self._digests[i]) == recall_digest(new)

    def retimed(self, i: int, new: Memory, occurred: float) -> bool:
        """Whether ``new`` differs from row ``i`` (which happened at ``occurred``) in its time alone (a
        distilled fact a later episode corroborates moves to that episode's time)."""
        return self.same_for_recall(i, new.model_copy(update={"occurred_at": from_ts(occurred)}))

    def columns(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Ids and session names (plain values), layer numbers, digests and session numbers (arrays) of
        every position, for the snapshot file."""
        ids = list(self._ids) + [m.id for m in self._tail]
        names = list(self._sessions[1])
        number = {name: code for code, name in enumerate(names)}
        fresh = []
        for m in self._tail:
            if m.session_id is not None and m.session_id not in number:
                number[m.session_id] = len(names)
                names.append(m.session_id)
            fresh.append(-1 if m.session_id is None else number[m.session_id])
        arrays = {
            "layer_codes": np.concatenate(
                [self._layers[: self._base], np.asarray([_LAYER_CODE[m.layer] for m in self._tail], dtype=np.uint8)]
            ),
            "digests": np.concatenate(
                [self._digests[: self._base], np.asarray([recall_digest(m) for m in self._tail], dtype=np.uint64)]
            ),
            "session_codes": np.concatenate([self._sessions[0][: self._base], np.asarray(fresh, dtype=np.int32)]),
        }
        return {"ids": ids, "session_names": names}, arrays


class Neighbours(Sequence[tuple[int, ...]]):
    """For each memory, the indexes of its neighbours in the same session (previous, next), read from
    the snapshot's ``previous`` / ``following`` arrays."""

    def __init__(self, previous: np.ndarray, following: np.ndarray) -> None:
        self._previous, self._following = previous, following

    def __len__(self) -> int:
        return len(self._previous)

    @typing.overload
    def __getitem__(self, i: int) -> tuple[int, ...]: ...
    @typing.overload
    def __getitem__(self, i: slice) -> list[tuple[int, ...]]: ...
    def __getitem__(self, i: int | slice) -> tuple[int, ...] | list[tuple[int, ...]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        before, after = int(self._previous[i]), int(self._following[i])
        if before >= 0:
            return (before, after) if after >= 0 else (before,)
        return (after,) if after >= 0 else ()


def _append(
    cached: Corpus, fresh: Sequence[Memory], replaced: dict[int, Memory], vectors_for: VectorsFor | None,
    change: int, max_seq: int, *, standing_of: StandingOf, vectors: np.ndarray | None = None,
    indexed: bool = False, retimed: Mapping[int, float] | None = None,
) -> Corpus:
    """A new snapshot: ``cached`` plus ``fresh`` memories at the end, ``replaced`` entries swapped
    (``retimed``: those of them whose time moved, with the new time).

    Everything is appended to the shared growth state and the new snapshot takes views of it, so this
    costs the new rows (``cached`` keeps its own, shorter views and stays as it was). Only ``following``
    (a new turn sets its predecessor's next) and the recency order are copied, as numpy arrays.
    ``indexed``: the keyword index already holds ``fresh`` (a build). The caller holds the growth lock,
    and ``cached`` is the latest snapshot of its growth state."""
    growth = cached.growth
    assert growth is not None and growth.rows == cached.size
    n0 = cached.size
    memories = cached.memories.extended(fresh, replaced)
    if not fresh:
        corpus = dataclasses.replace(cached, memories=memories, change=change, max_seq=max_seq)
        if retimed:
            corpus.occurred = _retimed(growth, growth.occurred.view(), retimed)
            corpus.by_recency, corpus.recency_keys = _recency(corpus.occurred)
        return corpus
    if vectors is None:
        vectors = vectors_for(fresh) if vectors_for is not None else np.zeros((0, cached.vectors.shape[1]),
                                                                               dtype=np.float32)
    if not indexed:
        growth.keyword.extend([m.content for m in fresh])
    n = n0 + len(fresh)
    kinds = standing_of(fresh, vectors)
    for i, m in enumerate(fresh, start=n0):
        growth.index[m.id] = i
        for name in m.entities:
            folded = name.casefold()
            members = growth.entities.get(folded)
            if members is None:
                growth.entities.set(folded, [i])
                growth.entity_names.set(folded, name)
            else:
                members.append(i)
        for kind in kinds[i - n0]:
            members = growth.standing_index.get(kind)
            if members is None:
                growth.standing_index.set(kind, [i])
            else:
                members.append(i)
    growth.ids.extend([m.id for m in fresh])
    cjk = [is_cjk(m.content) for m in fresh]
    growth.cjk.extend(cjk)
    growth.standing.extend(kinds)
    growth.cold.extend([i for i, m in enumerate(fresh, start=n0) if m.status == Status.COLD])
    # sessions: each new turn's predecessor, the predecessor's successor (in a copy: older snapshots
    # must not see a next turn they do not hold); ``previous`` rows are in place before a session's
    # last row moves to one of them (``_Growth.last_in_session_below`` walks back through them)
    previous = np.full(len(fresh), -1, dtype=np.int64)
    reply = np.zeros(len(fresh), dtype=bool)
    following = np.full(n, -1, dtype=np.int64)
    following[:n0] = cached.following[:n0]
    last: dict[str, int] = {}
    for i, m in enumerate(fresh, start=n0):
        if m.session_id is None:
            continue
        before = last.get(m.session_id, growth.last_in_session.get(m.session_id))
        if before is not None:
            previous[i - n0] = before
            following[before] = i
            # an older row's role: held, or read once (a loaded snapshot's first extension per session)
            earlier = fresh[before - n0] if before >= n0 else cached.memories[before]
            reply[i - n0] = _other_speaker(earlier.role, m.role)
        last[m.session_id] = i
    all_previous = growth.previous.append(previous)
    for session, i in last.items():
        growth.last_in_session.set(session, i)
    corpus = Corpus(
        key=cached.key, memories=memories, vectors=growth.vectors.append(vectors),
        keyword=growth.keyword.view(n), position=Positions(growth.index, growth.ids.view(), n),
        entities=growth.entities.view(members_below(n)), entity_names=growth.entity_names.view(_itself),
        change=change, max_seq=max_seq, growth=growth,
    )
    corpus.previous, corpus.following = all_previous, following
    corpus.reply = growth.reply.append(reply)
    corpus.neighbours = Neighbours(all_previous, following)
    corpus.cjk = growth.cjk.view()
    corpus.cjk_mask = growth.cjk_mask.append(np.asarray(cjk, dtype=bool))
    corpus.layer_codes = growth.layer_codes.append(np.asarray([_LAYER_CODE[m.layer] for m in fresh], dtype=np.uint8))
    corpus.standing = growth.standing.view()
    corpus.standing_index = growth.standing_index.view(members_below(n))
    corpus.occurred = growth.occurred.append(np.asarray([to_ts(m.occurred_at) for m in fresh], dtype=np.float64))
    if retimed:
        corpus.occurred = _retimed(growth, corpus.occurred, retimed)
        corpus.by_recency, corpus.recency_keys = _recency(corpus.occurred)
    else:
        corpus.by_recency, corpus.recency_keys = _merged_recency(cached, corpus.occurred, n0)
    moments = cached.moments or VectorMoments.empty(corpus.vectors.shape[1])
    corpus.moments = moments.of(corpus.vectors)
    corpus.layers = cached.layers | frozenset(m.layer for m in fresh)
    corpus.cold = growth.cold.view()
    corpus.has_superseded = cached.has_superseded
    return corpus


def _other_speaker(earlier: str | None, later: str | None) -> bool:
    """Whether two turns are by different speakers: roles compared case-insensitively, and a turn
    without a role is taken for someone else's (nothing says it continues the same speaker)."""
    return earlier is None or later is None or earlier.strip().casefold() != later.strip().casefold()


def _itself(value: T) -> T:
    return value


def _retimed(growth: _Growth, occurred: np.ndarray, retimed: Mapping[int, float]) -> np.ndarray:
    """``occurred`` with the ``retimed`` rows at their new times, in a new buffer the later snapshots
    grow from (the snapshots before keep their own times): one copy of the times, where a rebuild of
    the namespace took seconds at 100k memories each time a distilled fact was corroborated."""
    times = np.array(occurred, dtype=np.float64)
    times[np.fromiter(retimed, dtype=np.int64, count=len(retimed))] = list(retimed.values())
    growth.occurred = GrowingArray(times)
    return growth.occurred.view()


def _recency(occurred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions newest first (a stable sort of the times) and their negated times."""
    order = np.argsort(-occurred, kind="stable")
    return order, -occurred[order]


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


def columns(corpus: Corpus) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """What :func:`restore` needs to make ``corpus`` again, as plain values and flat arrays (the
    snapshot file's content). Read from ``corpus``'s own views, so it runs in the background while
    writes extend its growth state (only the session bookkeeping is read from that, as it stood)."""
    growth = corpus.growth
    assert growth is not None
    n = corpus.size
    moments = corpus.moments or VectorMoments.empty(corpus.vectors.shape[1])  # its tail: the last rows
    rows, row_arrays = corpus.memories.columns()
    vocabulary, arrays = corpus.keyword.columns()
    entity_keys = list(corpus.entities)
    kinds = sorted(corpus.standing_index)
    values: dict[str, Any] = {
        **rows, "vocabulary": vocabulary, "entity_keys": entity_keys,
        "entity_names": [corpus.entity_names.get(k, k) for k in entity_keys], "standing_kinds": kinds,
        "last_in_session": growth.last_in_session_below(n), "layers": sorted(layer.value for layer in corpus.layers),
        "cold": list(corpus.cold), "has_superseded": corpus.has_superseded, "change": corpus.change,
        "max_seq": corpus.max_seq, "moments_count": moments.count,
    }
    arrays.update(
        vectors=np.ascontiguousarray(corpus.vectors[:n], dtype=np.float32), occurred=corpus.occurred[:n],
        previous=corpus.previous[:n], following=corpus.following[:n], reply=corpus.reply[:n].astype(np.uint8),
        cjk=corpus.cjk_mask[:n].astype(np.uint8),
        by_recency=corpus.by_recency, recency_keys=corpus.recency_keys, moments_mean=moments.mean,
        moments_scatter=moments.scatter,
        **row_arrays,
        **_flat("entity", [corpus.entities[k] for k in entity_keys]),
        **_flat("standing", [corpus.standing_index[k] for k in kinds]),
    )
    return values, arrays


def _flat(name: str, lists: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(x) for x in lists])
    members = np.fromiter((i for x in lists for i in x), dtype=np.int32, count=int(offsets[-1]))
    return {f"{name}_offsets": offsets, f"{name}_members": members}


def _lists(arrays: dict[str, np.ndarray], name: str) -> list[list[int]]:
    bounds = arrays[f"{name}_offsets"].tolist()
    members = arrays[f"{name}_members"].tolist()
    return [members[bounds[j] : bounds[j + 1]] for j in range(len(bounds) - 1)]


def restore(namespace: str, include_cold: bool, fetch: Callable[[Sequence[str]], dict[str, Memory]],
            values: dict[str, Any], arrays: dict[str, np.ndarray]) -> Corpus:
    """The snapshot :func:`columns` described. Arrays are used in place (read-only memory maps: what is
    appended later goes to copies); memories are read from the store as recall needs them."""
    n = len(values["ids"])
    keyword = KeywordIndex.from_columns(values["vocabulary"], arrays)
    ids: list[str] = values["ids"]
    entity_keys: list[str] = values["entity_keys"]
    kinds: list[str] = values["standing_kinds"]
    standing_index = dict(zip(kinds, _lists(arrays, "standing"), strict=True))
    standing: list[tuple[str, ...]] = [()] * n
    for kind in kinds:
        for i in standing_index[kind]:
            standing[i] = (*standing[i], kind)
    cjk = arrays["cjk"].astype(bool)
    growth = _Growth(
        arrays["vectors"], keyword, ids=ids, previous=arrays["previous"], occurred=arrays["occurred"],
        reply=arrays["reply"].astype(bool),
        cjk=cjk.tolist(), standing=standing, entities=dict(zip(entity_keys, _lists(arrays, "entity"), strict=True)),
        entity_names=dict(zip(entity_keys, values["entity_names"], strict=True)), standing_index=standing_index,
        last_in_session={str(k): int(v) for k, v in values["last_in_session"].items()},
        cold=[int(i) for i in values["cold"]], layer_codes=arrays["layer_codes"],
    )
    memories = MemoryRows(namespace, fetch, ids, arrays["layer_codes"], arrays["digests"],
                          (arrays["session_codes"], values["session_names"]))
    corpus = Corpus(
        key=(namespace, include_cold), memories=memories, vectors=growth.vectors.view(), keyword=keyword.view(n),
        position=Positions(growth.index, growth.ids.view(), n), entities=growth.entities.view(members_below(n)),
        entity_names=growth.entity_names.view(_itself), change=int(values["change"]),
        max_seq=int(values["max_seq"]), growth=growth,
    )
    corpus.previous, corpus.following = growth.previous.view(), arrays["following"]
    corpus.reply = growth.reply.view()
    corpus.neighbours = Neighbours(corpus.previous, corpus.following)
    corpus.cjk_mask = growth.cjk_mask.view()
    corpus.layer_codes = growth.layer_codes.view()
    corpus.cjk = growth.cjk.view()
    corpus.standing = growth.standing.view()
    corpus.standing_index = growth.standing_index.view(members_below(n))
    corpus.occurred = growth.occurred.view()
    corpus.by_recency, corpus.recency_keys = arrays["by_recency"], arrays["recency_keys"]
    folded = int(values["moments_count"])
    corpus.moments = VectorMoments(folded, arrays["moments_mean"], arrays["moments_scatter"], corpus.vectors[folded:n])
    corpus.layers = frozenset(Layer(v) for v in values["layers"])
    corpus.cold = growth.cold.view()
    corpus.has_superseded = bool(values["has_superseded"])
    return corpus


#: The standing-fact kinds of memories given their vectors (profile.py; the pipeline binds the classifier).
StandingOf = Callable[[Sequence[Memory], np.ndarray], list[tuple[str, ...]]]


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
