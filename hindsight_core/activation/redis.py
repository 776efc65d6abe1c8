"""Activation index on Redis sorted sets.

Keys are ``{prefix}:{<namespace>}:act:<layer>``; the braces are a Redis Cluster hash tag, so every key of
a namespace lives in one slot and multi-key operations on a namespace stay legal in a cluster. The engine
names the prefix after its data set (``hindsight:<scope>``): data sets sharing one Redis hold the same
namespaces (staging beside production, two apps with the same user ids), and a key they shared would be
deleted by either one's reconcile or ``forget_namespace``. ``{prefix}:dataset`` names the data set that
owns the prefix (:meth:`RedisActivationIndex.intact`).

``redis+cluster://host:port`` (or ``rediss+cluster://``) connects a ``RedisCluster`` client through any
one node; it discovers the others. Any other URL is a single server (``redis.Redis.from_url``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from hindsight_core.errors import BackendUnavailableError, ForeignDataSetError
from hindsight_core.optional import require


@contextmanager
def _backend(what: str) -> Iterator[None]:
    """Redis failures surface as :class:`BackendUnavailableError` with the cause chained, so the engine
    never has to know redis-py's exception tree (and never leaks it to callers)."""
    try:
        yield
    except Exception as exc:
        if type(exc).__module__.startswith("redis"):
            raise BackendUnavailableError(f"activation index: {what} failed: {type(exc).__name__}: {exc}") from exc
        raise


CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def connect(url: str) -> Any:
    """A redis-py client for ``url``: a cluster client for the ``+cluster`` schemes. A cluster client
    contacts the cluster as it is built (to learn the slot map), so the index builds it on first use:
    an unreachable cluster is then an outage like an unreachable server, not a failure to open."""
    redis = require("redis", "redis")
    scheme, sep, rest = url.partition("://")
    timeouts = {"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
    if sep and scheme.lower() in CLUSTER_SCHEMES:
        return redis.RedisCluster.from_url(f"{CLUSTER_SCHEMES[scheme.lower()]}://{rest}", **timeouts)
    return redis.Redis.from_url(url, **timeouts)


class RedisActivationIndex:
    """``prefix`` is the index's own: one data set's (see the module doc). ``legacy_prefix`` is where an
    earlier version kept this data set's keys, unscoped, for :meth:`release_legacy` to clear."""

    def __init__(self, client: Any = None, *, url: str | None = None, prefix: str = "hindsight",
                 legacy_prefix: str | None = None) -> None:
        if client is None:
            require("redis", "redis")  # a missing extra is reported at open, not at the first write
        self._client = client
        self._url = url or "redis://127.0.0.1:6379/0"
        self._connect_lock = threading.Lock()
        self._prefix = prefix
        self._legacy = legacy_prefix

    @property
    def prefix(self) -> str:
        """What every key of this index starts with (then ``:``)."""
        return self._prefix

    @property
    def _r(self) -> Any:
        """The client, built on first use (see :func:`connect`); call inside :func:`_backend`."""
        if self._client is None:
            with self._connect_lock:
                if self._client is None:
                    self._client = connect(self._url)
        return self._client

    def key(self, namespace: str, layer: str) -> str:
        return _key(self._prefix, namespace, layer)

    def upsert(self, namespace: str, layer: str, items: Sequence[tuple[str, float]]) -> None:
        if items:
            with _backend("zadd"):
                self._r.zadd(self.key(namespace, layer), {mid: score for mid, score in items})

    def delete(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            with _backend("zrem"):
                self._r.zrem(self.key(namespace, layer), *dict.fromkeys(memory_ids))

    def top(self, namespace: str, layer: str, n: int) -> list[tuple[str, float]]:
        with _backend("zrevrange"):
            rows = self._r.zrevrange(self.key(namespace, layer), 0, max(0, int(n) - 1), withscores=True)
        return [(m.decode() if isinstance(m, bytes) else m, float(s)) for m, s in rows]

    def scores(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> dict[str, float]:
        if not memory_ids:
            return {}
        with _backend("zmscore"):
            values = self._r.zmscore(self.key(namespace, layer), list(memory_ids))
        return {mid: float(v) for mid, v in zip(memory_ids, values, strict=True) if v is not None}

    def count(self, namespace: str, layer: str) -> int:
        with _backend("zcard"):
            return int(self._r.zcard(self.key(namespace, layer)))

    def ids(self, namespace: str, layer: str) -> set[str]:
        with _backend("zrange"):
            members = self._r.zrange(self.key(namespace, layer), 0, -1)
        return {m.decode() if isinstance(m, bytes) else m for m in members}

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        keys = [self.key(namespace, layer) for layer in layers]
        if keys:
            with _backend("delete"):
                self._r.delete(*keys)

    # -- whose index this is, and lost-data detection -------------------------------------------------
    @property
    def marker(self) -> str:
        """The key naming the data set that owns the prefix: it lives exactly as long as the data (a Redis
        restarted without persistence has neither)."""
        return f"{self._prefix}:dataset"

    def intact(self, dataset: str) -> bool:
        """Whether the index holds what data set ``dataset`` wrote: its marker is there. Raises
        :class:`ForeignDataSetError` when the marker names another data set (the prefix is shared)."""
        with _backend("get"):
            owner = self._r.get(self.marker)
        if owner is None:
            return False
        _check_owner(owner, dataset, f"the Redis keys under {self._prefix!r}")
        return True

    def mark_intact(self, dataset: str) -> None:
        """Name ``dataset`` the prefix's owner, unless another data set was named first."""
        with _backend("set"):
            self._r.set(self.marker, dataset, nx=True)
            owner = self._r.get(self.marker)
        _check_owner(owner, dataset, f"the Redis keys under {self._prefix!r}")

    def release_legacy(self, dataset: str, namespaces: Iterable[str], layers: Sequence[str],
                       owns: Callable[[list[str]], set[str]]) -> None:
        """Remove this data set's entries from the keys an earlier version wrote without the data set in
        their names (``{legacy_prefix}:{<namespace>}:act:<layer>``), leaving any other data set's there.
        ``owns`` tells which ids are this data set's. That version's marker,
        ``{legacy_prefix}:epoch:<dataset>``, lived as long as what it wrote: without it there is nothing
        to release; it goes last, so an interrupted release is done again."""
        if self._legacy is None:
            return
        old_marker = f"{self._legacy}:epoch:{dataset}"
        with _backend("release"):
            if not self._r.exists(old_marker):
                return
            for namespace in namespaces:
                for layer in layers:
                    key = _key(self._legacy, namespace, layer)
                    held = [m.decode() if isinstance(m, bytes) else m for m in self._r.zrange(key, 0, -1)]
                    ours = owns(held) if held else set()
                    if ours:
                        self._r.zrem(key, *ours)
            self._r.delete(old_marker)

    def ping(self) -> bool:
        try:
            return bool(self._r.ping())
        except Exception:
            return False

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _key(prefix: str, namespace: str, layer: str) -> str:
    return f"{prefix}:{{{namespace}}}:act:{layer}"


def _check_owner(owner: Any, dataset: str, what: str) -> None:
    name = owner.decode() if isinstance(owner, bytes) else str(owner)
    if name != dataset:
        raise ForeignDataSetError(
            f"{what} belong to data set {name!r}, not to this engine's {dataset!r}: two data sets under one "
            "prefix would delete each other's entries, so nothing was touched. Give each data set its own "
            "prefix (RedisActivationIndex(prefix=...)), or let the engine name it (redis_url=...)."
        )
