"""Chroma vector index: ``PersistentClient`` in the data directory, or ``HttpClient`` for a server.

Telemetry is switched off (``anonymized_telemetry=False``) and no embedding function is configured,
so Chroma never downloads its default ONNX model: vectors always come from our embedder.

Opening costs: importing and opening Chroma, then, per collection, its first query loading the HNSW
index from disk (most of a new process's first recall at 100k memories). The engine's embedded index
is therefore opened lazily (``lazy=True``): the client opens on first use, and :meth:`loaded` tells
recall whether a collection was queried yet; until it was, recall scans its snapshot's vectors instead
(exact, and memory-mapped) and asks :meth:`load` to load the collection in the background."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from hindsight_core.errors import BackendUnavailableError
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
    except BackendUnavailableError:
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
_PAGE = 5_000


def collection_name(prefix: str, namespace: str, layer: str) -> str:
    """A collection per namespace and layer. Chroma names allow 3-63 characters of ``[a-zA-Z0-9._-]``,
    and namespaces are any text: the name is a digest, the namespace itself is in the metadata."""
    digest = hashlib.blake2b(namespace.encode("utf-8"), digest_size=12).hexdigest()
    return f"{prefix}_{layer}_{digest}"


class ChromaVectorIndex:
    """One Chroma collection per (namespace, layer), created on demand.

    A namespace stored as a metadata filter on one shared collection makes every tenant's query pay
    for all the others (Chroma filters, then searches: 111 ms at 1,000 x 100 against 2.5 ms for the
    namespace's vectors alone, docs/benchmarks.md "Scale"). With a collection each, a query touches the
    namespace's own HNSW graph only, and forgetting a namespace drops its collection. The layout is the
    same for the embedded client and a Chroma server. A directory written with the earlier layout (one
    ``{prefix}_{layer}`` collection) is moved over the first time its layer is used."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        url: str | None = None,
        client: Any = None,
        collection_prefix: str = "hindsight",
        lazy: bool = False,
    ) -> None:
        if client is None and url is None and path is None:
            raise ValueError("ChromaVectorIndex needs a path (embedded) or a url (server)")
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
        #: (namespace, layer) -> collection, for the ones that exist; absent means "not created yet".
        self._collections: dict[tuple[str, str], Any] = {}
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

    def _name(self, namespace: str, layer: str) -> str:
        return collection_name(self._prefix, namespace, layer)

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

    def _collection(self, namespace: str, layer: str, *, create: bool) -> Any:
        """The namespace's collection of ``layer``; ``None`` when it does not exist and ``create`` is off
        (a query of a namespace with nothing indexed must not create one per caller's typo)."""
        self._migrate_legacy(layer)
        key = (namespace, layer)
        with self._lock:
            found = self._collections.get(key)
            if found is not None:
                return found
            name = self._name(namespace, layer)
            if create:
                found = self._client.get_or_create_collection(
                    name, embedding_function=None,
                    metadata={"hnsw:space": "cosine", _NAMESPACE_KEY: namespace, _LAYER_KEY: layer},
                )
            else:
                try:
                    found = self._client.get_collection(name, embedding_function=None)
                except Exception as exc:
                    if _missing(exc):
                        return None
                    raise
            self._collections[key] = found
            return found

    def _layer_collections(self, layer: str) -> list[tuple[str, Any]]:
        """Every (namespace, collection) of ``layer`` that exists, from the server's catalogue."""
        self._migrate_legacy(layer)
        out: list[tuple[str, Any]] = []
        offset = 0
        while True:
            page = self._client.list_collections(limit=1000, offset=offset)
            for collection in page:
                meta = collection.metadata or {}
                if meta.get(_LAYER_KEY) == layer and _NAMESPACE_KEY in meta and str(collection.name).startswith(
                    f"{self._prefix}_{layer}_"
                ):
                    out.append((str(meta[_NAMESPACE_KEY]), collection))
            if len(page) < 1000:
                return out
            offset += 1000

    def _migrate_legacy(self, layer: str) -> None:
        """Move the entries of a pre-partition ``{prefix}_{layer}`` collection into per-namespace ones
        (vectors and metadata as stored, nothing re-embedded), then drop it. Runs once per layer."""
        if layer in self._migrated:
            return
        with self._lock:
            if layer in self._migrated:
                return
            legacy_name = f"{self._prefix}_{layer}"
            with _backend("migrate"):
                try:
                    legacy = self._client.get_collection(legacy_name, embedding_function=None)
                except Exception as exc:
                    if not _missing(exc):
                        raise
                    legacy = None
                if legacy is not None:
                    self._migrated.add(layer)  # _collection below must not recurse into here
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
                                self._collection(namespace, layer, create=True).upsert(
                                    ids=[page["ids"][i] for i in rows], embeddings=embeddings[rows],
                                    metadatas=[page["metadatas"][i] for i in rows],
                                )
                            legacy.delete(ids=list(page["ids"]))
                        self._client.delete_collection(legacy_name)
                    except BaseException:
                        self._migrated.discard(layer)
                        raise
            self._migrated.add(layer)

    def _on(self, namespace: str, layer: str, create: bool, call: Any) -> Any:
        """``call(collection)`` on the namespace's collection (``None`` when absent and not created).
        A handle cached here goes stale when another process dropped the collection (it forgot the
        namespace): that is retried once on a fresh lookup instead of failing."""
        collection = self._collection(namespace, layer, create=create)
        if collection is None:
            return call(None)
        try:
            return call(collection)
        except Exception as exc:
            if not _missing(exc):
                raise
            with self._lock:
                self._collections.pop((namespace, layer), None)
            return call(self._collection(namespace, layer, create=create))

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
            self._on(namespace, layer, True, lambda c: c.upsert(
                ids=[ids[i] for i in keep],
                embeddings=array[keep],
                metadatas=[{"namespace": namespace, "kind": kinds[i]} for i in keep],
            ))

    def delete(self, namespace: str, layer: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        unique = list(dict.fromkeys(ids))
        with _backend("delete"):
            self._on(namespace, layer, False, lambda c: c is not None and c.delete(ids=unique))

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        """Drop the namespace's collection of each layer (a collection that does not exist is fine)."""
        with _backend("delete"):
            for layer in layers:
                self._collection(namespace, layer, create=False)  # migrates a legacy layer first
                with self._lock:
                    self._collections.pop((namespace, layer), None)
                    try:
                        self._client.delete_collection(self._name(namespace, layer))
                    except Exception as exc:
                        if not _missing(exc):
                            raise

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
        where: dict[str, Any] | None = {"kind": {"$in": list(kinds)}} if kinds else None
        batch = np.asarray(vectors, dtype=np.float32)
        with _backend("query"):
            result = self._on(namespace, layer, False, lambda c: None if c is None else c.query(
                query_embeddings=batch,
                n_results=max(1, int(n)),
                where=where,
                include=["distances"],
            ))
        if self._lazy:
            self._queried.add((namespace, layer))
        if result is None or not result["ids"]:
            return [[] for _ in range(len(batch))]
        return [[VectorHit(mid, 1.0 - float(d)) for mid, d in zip(ids, distances, strict=True)]
                for ids, distances in zip(result["ids"], result["distances"], strict=True)]

    def count(self, namespace: str, layer: str) -> int:
        with _backend("count"):
            return int(self._on(namespace, layer, False, lambda c: 0 if c is None else c.count()))

    def count_layer(self, layer: str) -> int:
        """Entries of ``layer`` across every namespace. Not part of :class:`VectorIndex` (the engine
        always names a namespace): it lets a check see a write that went to an unexpected namespace."""
        with _backend("count"):
            return sum(int(c.count()) for _, c in self._layer_collections(layer))

    def ids(self, namespace: str, layer: str) -> set[str]:
        with _backend("get"):
            return set(self._on(namespace, layer, False, _all_ids))

    def reset_layer(self, layer: str) -> None:
        """Drop every collection of the layer, for every namespace: the repair of last resort when the
        layer's segments fail as a whole (deleting one namespace's entries did not make it answer).
        Only ``reconcile`` calls this, and it re-upserts everything from the stored embeddings."""
        with _backend("reset"), self._lock:
            for namespace, collection in self._layer_collections(layer):
                self._collections.pop((namespace, layer), None)
                self._client.delete_collection(collection.name)
            for key in [k for k in self._collections if k[1] == layer]:
                del self._collections[key]

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
            self._collections.clear()
        if self._opened is None:
            return
        closer = getattr(self._opened, "close", None)
        if callable(closer):
            closer()


def _all_ids(collection: Any) -> list[str]:
    if collection is None:
        return []
    out: list[str] = []
    while True:
        page = collection.get(include=[], limit=_PAGE, offset=len(out))["ids"]
        out += page
        if len(page) < _PAGE:
            return out


def _missing(exc: Exception) -> bool:
    """Chroma's "no such collection" (``NotFoundError`` in 1.x, a ``ValueError`` from older clients)."""
    return type(exc).__name__ in ("NotFoundError", "InvalidCollectionException") or (
        "does not exist" in str(exc).lower() or "not found" in str(exc).lower()
    )
