"""The activation index on a real Redis Cluster (three masters created by the test): the engine
connects with ``redis+cluster://``, every key of a namespace hashes to one slot (the ``{namespace}``
hash tag), so a multi-key command on one node is legal, and namespaces spread over the nodes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.activation.redis import RedisActivationIndex
from hindsight_core.errors import BackendUnavailableError

from .conftest import RedisCluster, free_port

NAMESPACES = [f"tenant-{i}" for i in range(12)] + ["用户:张伟", "agent:a/user:42"]


def _slot(cluster: RedisCluster, key: str) -> int:
    out = subprocess.run(
        ["redis-cli", "-p", str(cluster.ports[0]), "cluster", "keyslot", key], capture_output=True, text=True
    )
    return int(out.stdout.strip())


def test_activation_index_on_a_real_cluster(
    tmp_path: Path, redis_cluster: RedisCluster, embedder: Any, clock: Any
) -> None:
    with Hindsight(
        tmp_path / "data", redis_url=redis_cluster.url, embedder=embedder, clock=clock,
        background_consolidation=False,
    ) as hs:
        import redis

        assert isinstance(hs.activation._r, redis.RedisCluster)  # type: ignore[attr-defined]
        ids: dict[str, str] = {}
        for ns in NAMESPACES:
            ids[ns] = hs.record(f"I keep my bicycle in the shed behind house number {len(ids)}", ns).id
            hs.add_procedure(f"when {ns} asks for the shed key", ["look under the mat"], ns)
        index = hs.activation
        assert isinstance(index, RedisActivationIndex)
        nodes: set[str] = set()
        for ns in NAMESPACES:
            assert [m for m, _ in index.top(ns, "episodic", 10)] == [ids[ns]]
            assert set(index.scores(ns, "episodic", [ids[ns], "missing"])) == {ids[ns]}
            assert index.count(ns, "procedural") == 1
            keys = [index.key(ns, layer) for layer in ("episodic", "semantic", "procedural")]
            slots = {_slot(redis_cluster, k) for k in keys}
            assert len(slots) == 1, f"keys of {ns!r} hash to several slots: {slots}"
            # a multi-key command on the owning node, as one call: CROSSSLOT would refuse keys of two slots
            node = index._r.get_node_from_key(keys[0])  # type: ignore[attr-defined]
            nodes.add(node.name)
            direct = redis.Redis(host=node.host, port=node.port)
            assert direct.exists(*keys) == 2  # episodic + procedural hold data, semantic is empty
            direct.close()
        assert len(nodes) == 3, "the namespaces should spread over every master"
        # recall reads the cluster, not a degraded fallback
        result = hs.recall("Where is the bicycle?", NAMESPACES[3])
        assert result.degraded == [] and result.memories[0].id == ids[NAMESPACES[3]]
        # forgetting a namespace drops its keys (a multi-key DEL) and leaves the others alone
        hs.forget_namespace(NAMESPACES[0])
        assert index.top(NAMESPACES[0], "episodic", 10) == [] and index.count(NAMESPACES[0], "procedural") == 0
        assert [m for m, _ in index.top(NAMESPACES[1], "episodic", 10)] == [ids[NAMESPACES[1]]]
        assert hs.reconcile(verify=True).failed == 0
    # reopening finds its data-set marker in the cluster: nothing to repair
    with Hindsight(tmp_path / "data", redis_url=redis_cluster.url, embedder=embedder, clock=clock) as hs:
        assert hs.stats().outbox_pending == 0
        assert [m for m, _ in hs.activation.top(NAMESPACES[5], "episodic", 10)] == [ids[NAMESPACES[5]]]


def test_unreachable_cluster_is_an_outage(tmp_path: Path, embedder: Any) -> None:
    """A cluster nobody answers behaves like a Redis server that is down: the engine opens, writes are
    acknowledged with the activation work kept in the outbox, recall is flagged degraded, and the
    index itself raises the engine's own error, not redis-py's."""
    url = f"redis+cluster://127.0.0.1:{free_port()}"
    with Hindsight(tmp_path / "data", redis_url=url, embedder=embedder, background_consolidation=False) as hs:
        memory = hs.record("I keep my bicycle in the shed", "u1")
        assert hs.get(memory.id) is not None and hs.stats().outbox_pending == 1
        result = hs.recall("Where is the bicycle?", "u1")
        assert result.degraded == ["activation"] and result.memories[0].id == memory.id
        with pytest.raises(BackendUnavailableError, match="activation index"):
            hs.activation.top("u1", "episodic", 1)
