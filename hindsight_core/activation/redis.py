"""Activation index on Redis sorted sets.

Keys are ``{prefix}:{<namespace>}:act:<layer>``; the braces are a Redis Cluster hash tag, so every key of
a namespace lives in one slot and multi-key operations on a namespace stay legal in a cluster."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from hindsight_core.errors import BackendUnavailableError
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


class RedisActivationIndex:
    def __init__(self, client: Any = None, *, url: str | None = None, prefix: str = "hindsight") -> None:
        if client is None:
            redis = require("redis", "redis")
            client = redis.Redis.from_url(
                url or "redis://127.0.0.1:6379/0", socket_timeout=2.0, socket_connect_timeout=2.0
            )
        self._r = client
        self._prefix = prefix

    def key(self, namespace: str, layer: str) -> str:
        return f"{self._prefix}:{{{namespace}}}:act:{layer}"

    def upsert(self, namespace: str, layer: str, items: Sequence[tuple[str, float]]) -> None:
        if items:
            with _backend("zadd"):
                self._r.zadd(self.key(namespace, layer), {mid: score for mid, score in items})

    def remove(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> None:
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

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        keys = [self.key(namespace, layer) for layer in layers]
        if keys:
            with _backend("delete"):
                self._r.delete(*keys)

    # -- lost-data detection ---------------------------------------------------------------------
    def epoch_key(self, dataset: str) -> str:
        return f"{self._prefix}:epoch:{dataset}"

    def intact(self, dataset: str) -> bool:
        """Whether the index still holds what data set ``dataset`` wrote: the marker :meth:`mark_intact`
        sets survives exactly as long as the data does (a Redis restarted without persistence has
        neither). Per data set, since several may share one Redis and prefix."""
        with _backend("exists"):
            return bool(self._r.exists(self.epoch_key(dataset)))

    def mark_intact(self, dataset: str) -> None:
        with _backend("set"):
            self._r.set(self.epoch_key(dataset), "1")

    def ping(self) -> bool:
        try:
            return bool(self._r.ping())
        except Exception:
            return False

    def close(self) -> None:
        self._r.close()
