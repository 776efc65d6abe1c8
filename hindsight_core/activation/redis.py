"""Activation index on Redis sorted sets.

Keys are ``{prefix}:{<namespace>}:act:<layer>``; the braces are a Redis Cluster hash tag, so every key of
a namespace lives in one slot and multi-key operations on a namespace stay legal in a cluster."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hindsight_core.optional import require


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
            self._r.zadd(self.key(namespace, layer), {mid: score for mid, score in items})

    def remove(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            self._r.zrem(self.key(namespace, layer), *memory_ids)

    def top(self, namespace: str, layer: str, n: int) -> list[tuple[str, float]]:
        rows = self._r.zrevrange(self.key(namespace, layer), 0, max(0, int(n) - 1), withscores=True)
        return [(m.decode() if isinstance(m, bytes) else m, float(s)) for m, s in rows]

    def scores(self, namespace: str, layer: str, memory_ids: Sequence[str]) -> dict[str, float]:
        if not memory_ids:
            return {}
        values = self._r.zmscore(self.key(namespace, layer), list(memory_ids))
        return {mid: float(v) for mid, v in zip(memory_ids, values, strict=True) if v is not None}

    def count(self, namespace: str, layer: str) -> int:
        return int(self._r.zcard(self.key(namespace, layer)))

    def drop_namespace(self, namespace: str, layers: Iterable[str]) -> None:
        keys = [self.key(namespace, layer) for layer in layers]
        if keys:
            self._r.delete(*keys)

    def ping(self) -> bool:
        try:
            return bool(self._r.ping())
        except Exception:
            return False

    def close(self) -> None:
        self._r.close()
