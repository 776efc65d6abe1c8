"""Chroma vector index: ``PersistentClient`` in the data directory, or ``HttpClient`` for a server.

Telemetry is switched off (``anonymized_telemetry=False``) and no embedding function is configured,
so Chroma never downloads its default ONNX model: vectors always come from our embedder.

Opening costs: importing and opening Chroma, then, per collection, its first query loading the HNSW
index from disk (most of a new process's first recall at 100k memories). The engine's embedded index
is therefore opened lazily (``lazy=True``): the client opens on first use, and :meth:`loaded` tells
recall whether a collection was queried yet; until it was, recall scans its snapshot's vectors instead
(exact, and memory-mapped) and asks :meth:`load` to load the collection in the background.

Memory: each HNSW index Chroma opens holds about 2.7 MB whatever its size (hnswlib's fixed array of
mutexes), and Chroma keeps every index it opened (capping its cache loses unpersisted writes:
docs/benchmark-log.md, "Scale"). A collection per namespace would make a process serving 10,000 small
tenants hold 27 GB. Small namespaces therefore share a few pool collections, filtered by namespace
(Chroma answers a filtered query by an exact scan of the namespace's entries), and a namespace moves to a
collection of its own once it holds ``own_collection_at`` entries of a layer.

Names: every collection's name starts with the index's prefix, which the engine names after its data set
(``hindsight_<scope>``). Data sets sharing one Chroma server hold the same namespaces (staging beside
production, two apps with the same user ids); a collection or pool they shared would be emptied by
either one's reconcile or ``forget_namespace``. ``{prefix}_dataset`` is a collection without entries
whose metadata names the data set that owns the prefix (:meth:`ChromaVectorIndex.intact`)."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from hindsight_core.errors import BackendUnavailableError, ForeignDataSetError, HindsightError
from hindsight_core.vectors.base import VectorHit

log = logging.getLogger(__name__)

#: Chroma errors about the request itself (its ids, its arguments): the index works, this call is wrong.
_REQUEST_ERRORS = (
    "DuplicateIDError", "IDAlreadyExistsError", "InvalidArgumentError", "InvalidDimensionException",
    "BatchSizeExceededError", "InvalidUUIDError",
)


@contextmanager
def _backend(what: str) -> Iterator[None]:
    """Chroma failures surface as :class:`BackendUnavailableError` (cause chained), so callers handle one
    error type; a refused request is re-raised as it is, since retrying it elsewhere cannot help."""
    try:
        yield
    except HindsightError:  # already the project's own (an outage, or the store's answer)
        raise
    except Exception as exc:
        if type(exc).__name__ in _REQUEST_ERRORS or isinstance(exc, (TypeError, ValueError)):
            raise
        raise BackendUnavailableError(f"vector index: {what} failed: {type(exc).__name__}: {exc}") from exc


def _open_client(path: str | Path | None, url: str | None) -> Any:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if url:
        parsed = urlparse(url if "://" in url else f"http://{url}")
        try:
            return chromadb.HttpClient(
                host=parsed.hostname or "127.0.0.1",
                port=parsed.port or 8000,
                ssl=parsed.scheme == "https",
                settings=settings,
            )
        except ValueError as exc:  # chromadb reports a server that does not answer as a ValueError
            if "connect" not in str(exc).lower():
                raise
            raise BackendUnavailableError(f"vector index: no Chroma server answers at {url!r}: {exc}") from exc
    if path is None:
        raise ValueError("ChromaVectorIndex needs a path (embedded) or a url (server)")
    return chromadb.PersistentClient(path=str(path), settings=settings)


#: Collections named after a namespace carry this metadata key (the name itself is a digest).
_NAMESPACE_KEY = "hindsight:namespace"
_LAYER_KEY = "hindsight:layer"
#: Pool collections carry this metadata key (their number among the layer's pools).
_POOL_KEY = "hindsight:pool"
#: The marker collection carries this metadata key: the data set that owns the prefix.
_DATASET_KEY = "hindsight:dataset"
_PAGE = 5_000
#: A namespace moves from its pool to a collection of its own at this many entries of a layer: from
#: there on its 2.7 MB of index state is under 3 KB per memory, what the vectors themselves cost.
OWN_COLLECTION_AT = 1_000
#: Pool collections per layer: the memory they hold is fixed, and a filtered query scans only its
#: namespace's entries (1.9 ms in a pool of 2,500 entries, 5.3 ms in one of 12,500).
POOLS = 16
#: How long a process trusts that a namespace it saw pooled still is (another may have moved it since).
_RECHECK_S = 2.0


def collection_name(prefix: str, namespace: str, layer: str) -> str:
    """A collection per namespace and layer. Chroma names allow 3-63 characters of ``[a-zA-Z0-9._-]``,
    and namespaces are any text: the name is a digest, the namespace itself is in the metadata."""
    digest = hashlib.blake2b(namespace.encode("utf-8"), digest_size=12).hexdigest()
    return f"{prefix}_{layer}_{digest}"


def pool_name(prefix: str, namespace: str, layer: str, pools: int = POOLS) -> str:
    """The pool collection a namespace without a collection of its own keeps its entries of ``layer`` in.
    (``pool`` is not hexadecimal: no namespace's own collection can have this name.)"""
    digest = hashlib.blake2b(namespace.encode("utf-8"), digest_size=8).digest()
    return f"{prefix}_{layer}_pool{int.from_bytes(digest, 'big') % pools:03d}"


class ChromaVectorIndex:
    """Small namespaces in shared pool collections, large ones in a collection of their own.

    A namespace stored as a metadata filter on one big shared collection makes every tenant's query pay
    for all the others (111 ms at 1,000 x 100 against 2.5 ms for the namespace's vectors alone,
    docs/benchmark-log.md "Scale"); a collection per namespace costs 2.7 MB of memory each. So a namespace
    starts in one of ``pools`` pool collections of its layer (chosen by a hash of the namespace), where a
    filtered query scans its few entries exactly, and moves to a collection of its own, searched by its
    own HNSW graph, when it reaches ``own_collection_at`` entries. The layout is the same for the
    embedded client and a Chroma server.

    Several processes share a server: a process learns that another one moved a namespace out of its
    pool within ``_RECHECK_S``, and moves over what it wrote to the pool meanwhile. Memory ids are
    unique across namespaces, so a pool holds each id once; every pool operation is also filtered by
    namespace, so one namespace's call never touches another's entries. Directories written with a
    collection per namespace keep working (those namespaces count as moved), and the earliest layout
    (one ``{prefix}_{layer}`` collection) is moved over the first time its layer is used.

    Every name starts with ``collection_prefix``, one data set's own (see the module doc);
    ``legacy_prefix`` is where an earlier version kept this data set's entries without the data set in
    the names, for :meth:`release_legacy` to clear."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        url: str | None = None,
        client: Any = None,
        collection_prefix: str = "hindsight",
        legacy_prefix: str | None = None,
        lazy: bool = False,
        own_collection_at: int = OWN_COLLECTION_AT,
        pools: int = POOLS,
    ) -> None:
        if client is None and url is None and path is None:
            raise ValueError("ChromaVectorIndex needs a path (embedded) or a url (server)")
        if own_collection_at < 1 or pools < 1:
            raise ValueError("own_collection_at and pools must be at least 1")
        self._lazy = lazy and client is None and url is None
        self._path = path
        if self._lazy:  # the data directory's layout is there from the start, as with an opened client
            Path(str(path)).mkdir(parents=True, exist_ok=True)
        self._opened: Any = client if client is not None or self._lazy else _open_client(path, url)
        self._opening = threading.Lock()
        #: Collections queried by this process (their HNSW index is in memory); with ``lazy`` only.
        self._queried: set[tuple[str, str]] = set()
        #: Collections to load in the background, with a vector to query them with, and the loader.
        self._to_load: dict[tuple[str, str], np.ndarray] = {}
        self._loader: threading.Thread | None = None
        self._loads = threading.Condition()
        self._closing = False
        self._prefix = collection_prefix
        self._legacy = legacy_prefix
        self._own_at = own_collection_at
        self._pools = pools
        #: (namespace, layer) -> its own collection, for namespaces known to have one.
        self._collections: dict[tuple[str, str], Any] = {}
        #: (namespace, layer) -> when it was last seen without a collection of its own.
        self._pooled_since: dict[tuple[str, str], float] = {}
        #: (namespace, layer) -> entries it holds in its pool, counted high (an update counts as new).
        self._pooled: dict[tuple[str, str], int] = {}
        #: pool collection name -> collection.
        self._pool_handles: dict[str, Any] = {}
        self._migrated: set[str] = set()
        self._lock = threading.RLock()

    @property
    def _client(self) -> Any:
        if self._opened is None:
            os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
            import chromadb  # noqa: F401  (most of the opening's cost, and outside the lock: see close)

            with self._opening:
                if self._opened is None:
                    if self._closing:
                        raise BackendUnavailableError("vector index: closed")
                    self._opened = _open_client(self._path, None)
        return self._opened

    @property
    def lazy_path(self) -> str | None:
        """The directory of an index opened on first use (``lazy``), ``None`` for one already open: what
        the engine keys its note that the index there is this data set's, so that opening the engine
        again need not open Chroma to look at the marker."""
        return str(Path(str(self._path)).resolve()) if self._lazy else None

    # -- loading in the background (``lazy``) -------------------------------------------------------
    def loaded(self, namespace: str, layer: str) -> bool:
        """Whether a query of the collection costs a query (and not also loading its index)."""
        return not self._lazy or (namespace, layer) in self._queried

    def load(self, namespace: str, layers: Sequence[str], vector: np.ndarray) -> None:
        """Load the collections of ``layers`` in a background thread (one query each); a process that
        closes first stops after the collection it is loading."""
        with self._loads:
            if self._closing:
                return
            for layer in layers:
                if not self.loaded(namespace, layer):
                    self._to_load.setdefault((namespace, layer), vector)
            if self._to_load and self._loader is None:
                self._loader = threading.Thread(target=self._load_queued, name="hindsight-vectors-load", daemon=True)
                self._loader.start()

    def _load_queued(self) -> None:
        while True:
            with self._loads:
                if not self._to_load or self._closing:
                    self._to_load.clear()
                    self._loader = None
                    self._loads.notify_all()
                    return
                key = next(iter(self._to_load))
                vector = self._to_load.pop(key)
            try:
                self._client  # noqa: B018  (opened first: a close meanwhile stops the loader here)
                if self._closing:
                    continue
                self.query(*key, vector, 1)
            except Exception as exc:  # recall queries it again, and reports an outage then
                log.debug("loading the vector index of %r failed: %s", key, exc)

    def wait_loaded(self) -> None:
        """Return once the collections asked for by :meth:`load` are loaded (or failed to)."""
        with self._loads:
            while self._loader is not None:
                self._loads.wait()

    # -- where a namespace's entries are ---------------------------------------------------------------
    def _get(self, name: str) -> Any:
        """The collection called ``name``, or ``None``."""
        try:
            return self._client.get_collection(name, embedding_function=None)
        except Exception as exc:
            if _missing(exc):
                return None
            raise

    def _own(self, namespace: str, layer: str, *, fresh: bool = False) -> Any:
        """The namespace's own collection of ``layer``, or ``None`` while it lives in a pool. A namespace
        seen pooled is looked up again after ``_RECHECK_S`` (or at once with ``fresh``): another process
        may have moved it meanwhile, and what this process wrote to the pool since is then moved too."""
        self._migrate_legacy(layer)
        key = (namespace, layer)
        with self._lock:
            found = self._collections.get(key)
            if found is not None:
                return found
            since = self._pooled_since.get(key)
            if since is not None and not fresh and time.monotonic() - since < _RECHECK_S:
                return None
            found = self._get(collection_name(self._prefix, namespace, layer))
            if found is None:
                self._pooled_since[key] = time.monotonic()
                return None
            self._collections[key] = found
            self._pooled.pop(key, None)
            if self._pooled_since.pop(key, None) is not None:
                self._move_pooled_readable(namespace, layer, found)
            return found

    def _pool(self, namespace: str, layer: str, *, create: bool) -> Any:
        name = pool_name(self._prefix, namespace, layer, self._pools)
        with self._lock:
            found = self._pool_handles.get(name)
            if found is None:
                if create:
                    number = int(name.rsplit("pool", 1)[1])
                    found = self._client.get_or_create_collection(
                        name, embedding_function=None,
                        metadata={"hnsw:space": "cosine", _LAYER_KEY: layer, _POOL_KEY: number},
                    )
                else:
                    found = self._get(name)
                    if found is None:
                        return None
                self._pool_handles[name] = found
            return found

    def _forget_handles(self, namespace: str, layer: str) -> None:
        with self._lock:
            self._collections.pop((namespace, layer), None)
            self._pooled_since.pop((namespace, layer), None)
            self._pool_handles.pop(pool_name(self._prefix, namespace, layer, self._pools), None)

    def _on(self, namespace: str, layer: str, create: bool, call: Any) -> Any:
        """``call(collection, where)`` where the namespace's entries of ``layer`` are: its own collection
        (``where`` is ``None``) or its pool (``where`` selects the namespace); ``collection`` is ``None``
        when neither exists and ``create`` is off (a query must not create a pool per caller's typo). A
        cached handle goes stale when another process dropped the collection: that is retried once."""
        for attempt in (0, 1):
            own = self._own(namespace, layer)
            collection = own if own is not None else self._pool(namespace, layer, create=create)
            try:
                return call(collection, None if own is not None else {"namespace": namespace})
            except Exception as exc:
                if attempt or collection is None or not _missing(exc):
                    raise
                self._forget_handles(namespace, layer)
        raise AssertionError("unreachable")

    def _move_pooled(self, namespace: str, layer: str, own: Any) -> None:
        """Move the namespace's pool entries of ``layer`` into ``own`` (vectors and metadata as stored).
        Entries reach the pool after the namespace moved only from a process that had not yet seen the
        move, so they are newer than what ``own`` holds and overwrite it."""
        pool = self._pool(namespace, layer, create=False)
        if pool is None:
            return
        where = {"namespace": namespace}
        while True:
            page = pool.get(where=where, limit=_PAGE, include=["embeddings", "metadatas"])
            if not page["ids"]:
                return
            own.upsert(ids=page["ids"], embeddings=np.asarray(page["embeddings"], dtype=np.float32),
                       metadatas=page["metadatas"])
            pool.delete(ids=list(page["ids"]), where=where)

    def _move_pooled_readable(self, namespace: str, layer: str, own: Any) -> None:
        """:meth:`_move_pooled`, leaving the entries where they are when the pool's vectors cannot be read
        (a segment several writers flushed over): the store holds every vector, so ``reconcile`` writes
        what the namespace's collection lacks again, and the operation that found the move goes on."""
        try:
            self._move_pooled(namespace, layer, own)
        except Exception as exc:
            log.warning("vector index: moving %s's pooled %s entries failed: %s", namespace, layer, exc)

    def _move_into(self, namespace: str, layer: str, own: Any, ids: list[str], vectors: np.ndarray,
                   metadatas: list[Any]) -> None:
        """Move the pool's entries into ``own``, and this write's batch whatever the pool's state: a pool
        whose vectors cannot be read keeps its older entries (``reconcile`` writes what ``own`` lacks from
        the store), but the batch being acknowledged must land where reads now look."""
        self._move_pooled_readable(namespace, layer, own)
        own.upsert(ids=ids, embeddings=vectors, metadatas=metadatas)

    def _write(self, namespace: str, layer: str, ids: list[str], vectors: np.ndarray, metadatas: list[Any]) -> None:
        """Upsert into wherever the namespace's entries are; a pooled namespace that reaches
        ``own_collection_at`` entries moves to a collection of its own."""
        key = (namespace, layer)

        def write(collection: Any, where: dict[str, Any] | None) -> bool:
            collection.upsert(ids=ids, embeddings=vectors, metadatas=metadatas)
            return where is not None

        if not self._on(namespace, layer, True, write):
            return
        with self._lock:
            moved = self._collections.get(key)
            if moved is not None:  # another thread moved the namespace while this one wrote to the pool
                self._move_into(namespace, layer, moved, ids, vectors, metadatas)
                return
            held = self._pooled.get(key)
            held = len(self._pool_ids(namespace, layer)) if held is None else held + len(ids)
            if held >= self._own_at:  # counted high: count exactly before moving
                held = len(self._pool_ids(namespace, layer))
            if held < self._own_at:
                self._pooled[key] = held
                return
            own = self._client.get_or_create_collection(
                collection_name(self._prefix, namespace, layer), embedding_function=None,
                metadata={"hnsw:space": "cosine", _NAMESPACE_KEY: namespace, _LAYER_KEY: layer},
            )
            self._move_into(namespace, layer, own, ids, vectors, metadatas)
            self._collections[key] = own
            self._pooled.pop(key, None)
            self._pooled_since.pop(key, None)

    def _pool_ids(self, namespace: str, layer: str) -> list[str]:
        return _all_ids(self._pool(namespace, layer, create=False), {"namespace": namespace})

    def _layer_collections(self, layer: str) -> list[Any]:
        """Every collection of ``layer`` (own and pools) that exists, from the server's catalogue."""
        self._migrate_legacy(layer)
        out: list[Any] = []
        offset = 0
        while True:
            page = self._client.list_collections(limit=1000, offset=offset)
            for collection in page:
                meta = collection.metadata or {}
                if (meta.get(_LAYER_KEY) == layer and (_NAMESPACE_KEY in meta or _POOL_KEY in meta)
                        and str(collection.name).startswith(f"{self._prefix}_{layer}_")):
                    out.append(collection)
            if len(page) < 1000:
                return out
            offset += 1000

    def _migrate_legacy(self, layer: str) -> None:
        """Move the entries of a pre-partition ``{prefix}_{layer}`` collection to where each namespace's
        entries go now (vectors and metadata as stored, nothing re-embedded), then drop it. Runs once
        per layer."""
        if layer in self._migrated:
            return
        with self._lock:
            if layer in self._migrated:
                return
            legacy_name = f"{self._prefix}_{layer}"
            with _backend("migrate"):
                legacy = self._get(legacy_name)
                if legacy is not None:
                    self._migrated.add(layer)  # _write below must not recurse into here
                    try:
                        while True:
                            page = legacy.get(limit=_PAGE, include=["embeddings", "metadatas"])
                            if not page["ids"]:
                                break
                            groups: dict[str, list[int]] = {}
                            for i, meta in enumerate(page["metadatas"]):
                                groups.setdefault(str((meta or {}).get("namespace", "")), []).append(i)
                            embeddings = np.asarray(page["embeddings"], dtype=np.float32)
                            for namespace, rows in groups.items():
                                self._write(namespace, layer, [page["ids"][i] for i in rows], embeddings[rows],
                                            [page["metadatas"][i] for i in rows])
                            legacy.delete(ids=list(page["ids"]))
                        self._client.delete_collection(legacy_name)
                    except BaseException:
                        self._migrated.discard(layer)
                        raise
            self._migrated.add(layer)

    # -- whose index this is ------------------------------------------------------------------------------
    @property
    def marker(self) -> str:
        """The collection naming the data set that owns the prefix (no entries, only metadata)."""
        return f"{self._prefix}_dataset"

    def intact(self, dataset: str) -> bool:
        """Whether the index holds what data set ``dataset`` wrote: its marker is there (a server that
        lost its data, or a prefix this data set never wrote, has none). Raises
        :class:`ForeignDataSetError` when the marker names another data set (the prefix is shared)."""
        with _backend("get"):
            found = self._get(self.marker)
        if found is None:
            return False
        self._check_owner(found, dataset)
        return True

    def mark_intact(self, dataset: str) -> None:
        """Name ``dataset`` the prefix's owner, unless another data set was named first."""
        with _backend("mark"):
            found = self._client.get_or_create_collection(
                self.marker, embedding_function=None, metadata={_DATASET_KEY: dataset})
        self._check_owner(found, dataset)

    def _check_owner(self, marker: Any, dataset: str) -> None:
        owner = (marker.metadata or {}).get(_DATASET_KEY)
        if owner != dataset:
            raise ForeignDataSetError(
                f"the Chroma collections under {self._prefix!r} belong to data set {owner!r}, not to this "
                f"engine's {dataset!r}: two data sets under one prefix would delete each other's entries, so "
                "nothing was touched. Give each data set its own prefix (ChromaVectorIndex(collection_prefix="
                "...)), or let the engine name it (chroma_url=...)."
            )

    def release_legacy(self, dataset: str, namespaces: Iterable[str], layers: Sequence[str],
                       owns: Callable[[list[str]], set[str]]) -> None:
        """Delete this data set's entries from the collections an earlier version named without the data
        set (``{legacy_prefix}_{layer}``, ``..._{layer}_poolNNN``, ``..._{layer}_<digest>``), leaving any
        other data set's entries there, and drop the collections that are then empty. ``owns`` tells
        which ids are this data set's (its memories, and its erased ones: a vector left there would
        outlive the erasure). Every legacy collection is read whole, whatever ``namespaces`` says: the
        namespace of an own collection is in its name only as a digest."""
        if self._legacy is None:
            return
        with _backend("release"), self._lock:
            offset, found = 0, []
            while True:
                page = self._client.list_collections(limit=1000, offset=offset)
                found += [c for c in page if _legacy_of(str(c.name), self._legacy, layers)]
                if len(page) < 1000:
                    break
                offset += 1000
            for collection in found:
                try:
                    held = _all_ids(collection)
                    for start in range(0, len(held), _PAGE):
                        ours = owns(held[start : start + _PAGE])
                        if ours:
                            collection.delete(ids=sorted(ours))
                    if collection.count() == 0:
                        self._client.delete_collection(collection.name)
                except Exception as exc:  # another process sharing the data set dropped it first
                    if not _missing(exc):
                        raise

    # -- the VectorIndex operations --------------------------------------------------------------------
    def upsert(
        self, namespace: str, layer: str, ids: Sequence[str], vectors: np.ndarray, kinds: Sequence[str]
    ) -> None:
        if not ids:
            return
        # Chroma refuses a batch naming an id twice; the last occurrence is the newest state.
        last = {mid: i for i, mid in enumerate(ids)}
        keep = sorted(last.values())
        array = np.asarray(vectors, dtype=np.float32)
        with _backend("upsert"):
            self._write(namespace, layer, [ids[i] for i in keep], array[keep],
                        [{"namespace": namespace, "kind": kinds[i]} for i in keep])

    def delete(self, namespace: str, layer: str, ids: Sequence[str]) -> None:
        """Delete from the namespace's own collection and from its pool: a process that has not seen the
        namespace move may have written to the pool after it did."""
        if not ids:
            return
        unique = list(dict.fromkeys(ids))
        with _backend("delete"):
            own = self._own(namespace, layer, fresh=True)
            if own is not None:
                own.delete(ids=unique)
            pool = self._pool(namespace, layer, create=False)
            if pool is not None:
                pool.delete(ids=unique, where={"namespace": namespace})

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        """Drop the namespace's own collection and its pool entries of each layer (none is fine)."""
        with _backend("delete"):
            for layer in layers:
                self._migrate_legacy(layer)
                with self._lock:
                    self._forget_handles(namespace, layer)
                    self._pooled.pop((namespace, layer), None)
                    try:
                        self._client.delete_collection(collection_name(self._prefix, namespace, layer))
                    except Exception as exc:
                        if not _missing(exc):
                            raise
                    pool = self._pool(namespace, layer, create=False)
                    if pool is not None:
                        pool.delete(where={"namespace": namespace})

    def query(
        self, namespace: str, layer: str, vector: np.ndarray, n: int, *, kinds: Sequence[str] | None = None
    ) -> list[VectorHit]:
        return self.query_many(namespace, layer, np.asarray(vector)[None, :], n, kinds=kinds)[0]

    def query_many(
        self, namespace: str, layer: str, vectors: np.ndarray, n: int, *, kinds: Sequence[str] | None = None
    ) -> list[list[VectorHit]]:
        """One hit list per row of ``vectors``, in one call: Chroma's cost per query is mostly the call,
        so a batch of 100 costs about what ten single queries do (what lets ``reconcile`` probe every
        memory of a namespace)."""
        batch = np.asarray(vectors, dtype=np.float32)

        def search(collection: Any, where: dict[str, Any] | None) -> Any:
            if collection is None:
                return None
            clauses = [c for c in (where, {"kind": {"$in": list(kinds)}} if kinds else None) if c]
            return collection.query(
                query_embeddings=batch,
                n_results=max(1, int(n)),
                where=clauses[0] if len(clauses) == 1 else ({"$and": clauses} if clauses else None),
                include=["distances"],
            )

        with _backend("query"):
            result = self._on(namespace, layer, False, search)
        if self._lazy:
            self._queried.add((namespace, layer))
        if result is None or not result["ids"]:
            return [[] for _ in range(len(batch))]
        return [[VectorHit(mid, 1.0 - float(d)) for mid, d in zip(ids, distances, strict=True)]
                for ids, distances in zip(result["ids"], result["distances"], strict=True)]

    def shared(self, namespace: str, layer: str) -> bool:
        with _backend("query"):
            return self._own(namespace, layer) is None

    def count(self, namespace: str, layer: str) -> int:
        with _backend("count"):
            return int(self._on(namespace, layer, False, lambda c, where: (
                0 if c is None else c.count() if where is None else len(_all_ids(c, where)))))

    def count_layer(self, layer: str) -> int:
        """Entries of ``layer`` across every namespace. Not part of :class:`VectorIndex` (the engine
        always names a namespace): it lets a check see a write that went to an unexpected namespace."""
        with _backend("count"):
            return sum(int(c.count()) for c in self._layer_collections(layer))

    def ids(self, namespace: str, layer: str) -> set[str]:
        """Reconcile's view of the namespace; for a namespace with its own collection, entries another
        process left in the pool are moved over first, so the answer is where queries look."""
        with _backend("get"):
            own = self._own(namespace, layer, fresh=True)
            if own is not None:
                with self._lock:
                    self._move_pooled_readable(namespace, layer, own)
            return set(self._on(namespace, layer, False, _all_ids))

    def reset_layer(self, layer: str) -> None:
        """Drop every collection of the layer (own and pools): ``reconcile``'s repair of last resort
        when the layer's segments fail as a whole (deleting one namespace's entries did not make it
        answer), and a move to another embedder (the pools have the old vectors' dimension). Both then
        upsert everything again."""
        with _backend("reset"), self._lock:
            for collection in self._layer_collections(layer):
                self._client.delete_collection(collection.name)
            for cache in (self._collections, self._pooled_since, self._pooled):
                for key in [k for k in cache if k[1] == layer]:
                    del cache[key]
            self._pool_handles = {k: v for k, v in self._pool_handles.items()
                                  if not k.startswith(f"{self._prefix}_{layer}_pool")}

    def close(self) -> None:
        """Close the client. A background load still importing Chroma is not waited for (it stops
        before opening the client, so a one-shot process does not pay for loading an index it will
        not query); one querying an open client is."""
        with self._loads:
            self._closing = True
            self._to_load.clear()
        with self._opening:  # an open in progress finishes; none starts after this
            opened = self._opened is not None
        if opened:
            self.wait_loaded()
        with self._lock:
            for cache in (self._collections, self._pooled_since, self._pooled, self._pool_handles):
                cache.clear()
        if self._opened is None:
            return
        closer = getattr(self._opened, "close", None)
        if callable(closer):
            closer()


def _all_ids(collection: Any, where: dict[str, Any] | None = None) -> list[str]:
    if collection is None:
        return []
    out: list[str] = []
    while True:
        page = collection.get(where=where, include=[], limit=_PAGE, offset=len(out))["ids"]
        out += page
        if len(page) < _PAGE:
            return out


def _missing(exc: Exception) -> bool:
    """Chroma's "no such collection" (``NotFoundError`` in 1.x, a ``ValueError`` from older clients)."""
    return type(exc).__name__ in ("NotFoundError", "InvalidCollectionException") or (
        "does not exist" in str(exc).lower() or "not found" in str(exc).lower()
    )


def _legacy_of(name: str, legacy: str, layers: Sequence[str]) -> bool:
    """Whether ``name`` is a collection of the layout under ``legacy``: ``{legacy}_{layer}`` or
    ``{legacy}_{layer}_...``. A scoped name (``{legacy}_<scope>_{layer}_...``) is not."""
    return any(name == f"{legacy}_{layer}" or name.startswith(f"{legacy}_{layer}_") for layer in layers)
