"""Chroma vector index: ``PersistentClient`` in the data directory, or ``HttpClient`` for a server.

Telemetry is switched off (``anonymized_telemetry=False``) and no embedding function is configured,
so Chroma never downloads its default ONNX model: vectors always come from our embedder."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from hindsight_core.errors import BackendUnavailableError
from hindsight_core.vectors.base import VectorHit

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


def _client(path: str | Path | None, url: str | None) -> Any:
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


class ChromaVectorIndex:
    def __init__(
        self,
        path: str | Path | None = None,
        *,
        url: str | None = None,
        client: Any = None,
        collection_prefix: str = "hindsight",
    ) -> None:
        self._client = client if client is not None else _client(path, url)
        self._prefix = collection_prefix
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _collection(self, layer: str) -> Any:
        with self._lock:
            if layer not in self._collections:
                self._collections[layer] = self._client.get_or_create_collection(
                    f"{self._prefix}_{layer}", embedding_function=None, metadata={"hnsw:space": "cosine"}
                )
            return self._collections[layer]

    def upsert(
        self, layer: str, namespace: str, ids: Sequence[str], vectors: np.ndarray, kinds: Sequence[str]
    ) -> None:
        if not ids:
            return
        # Chroma refuses a batch naming an id twice; the last occurrence is the newest state.
        last = {mid: i for i, mid in enumerate(ids)}
        keep = sorted(last.values())
        array = np.asarray(vectors, dtype=np.float32)
        with _backend("upsert"):
            self._collection(layer).upsert(
                ids=[ids[i] for i in keep],
                embeddings=array[keep],
                metadatas=[{"namespace": namespace, "kind": kinds[i]} for i in keep],
            )

    def delete(self, layer: str, ids: Sequence[str]) -> None:
        if ids:
            with _backend("delete"):
                self._collection(layer).delete(ids=list(dict.fromkeys(ids)))

    def delete_namespace(self, layer: str, namespace: str) -> None:
        with _backend("delete"):
            self._collection(layer).delete(where={"namespace": namespace})

    def query(
        self, layer: str, namespace: str, vector: np.ndarray, n: int, *, kinds: Sequence[str] | None = None
    ) -> list[VectorHit]:
        where: dict[str, Any] = {"namespace": namespace}
        if kinds:
            where = {"$and": [where, {"kind": {"$in": list(kinds)}}]}
        with _backend("query"):
            result = self._collection(layer).query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)],
                n_results=max(1, int(n)),
                where=where,
                include=["distances"],
            )
        ids = result["ids"][0] if result["ids"] else []
        distances = result["distances"][0] if result["distances"] else []
        return [VectorHit(mid, 1.0 - float(d)) for mid, d in zip(ids, distances, strict=True)]

    def count(self, layer: str, namespace: str | None = None) -> int:
        if namespace is None:
            with _backend("count"):
                return int(self._collection(layer).count())
        return len(self.ids(layer, namespace))

    def ids(self, layer: str, namespace: str) -> set[str]:
        with _backend("get"):
            return set(self._collection(layer).get(where={"namespace": namespace}, include=[])["ids"])

    def reset_layer(self, layer: str) -> None:
        """Drop and recreate the layer's collection, for every namespace: the repair of last resort when
        its segment is corrupt as a whole (deleting one namespace's entries did not make it answer).
        Only ``reconcile`` calls this, and it re-upserts everything from the stored embeddings."""
        name = f"{self._prefix}_{layer}"
        self._collection(layer)  # make sure it exists, so deleting cannot fail for a missing name
        with self._lock:
            self._collections.pop(layer, None)
            self._client.delete_collection(name)

    def close(self) -> None:
        with self._lock:
            self._collections.clear()
        closer = getattr(self._client, "close", None)
        if callable(closer):
            closer()
