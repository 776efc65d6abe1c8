"""Verification that the vector index answers correctly, not only that it holds the right ids.

A Chroma directory that two processes wrote can hold every expected id (its metadata is intact) and
still fail or mis-answer queries, because its HNSW segment no longer matches the metadata (``Error
finding id``). Comparing id sets cannot see that, so ``reconcile(verify=True)`` also probes: for each
namespace and layer it looks up a sample of memories with their own stored vectors (the ``embeddings``
table, so no re-embedding) and requires each to come back among the top hits without the query raising.

Cost is bounded: at most ``PROBE_RECENT + PROBE_RANDOM`` vector queries per namespace and layer,
whatever the number of memories (plus one indexed SQL scan to draw the random part). The most recent
memories are always probed because a concurrent writer damages what was written last.

A namespace that answers wrongly is rebuilt through the outbox: its entries in that layer are deleted and
every memory it should hold is re-upserted from the stored embeddings. If that does not make it answer,
or if a query raised (the collection's segment is corrupt, whichever namespace showed it), the layer's
collection is dropped and rebuilt for every namespace."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import PERSISTENT_LAYERS
from hindsight_core.vectors.base import VectorIndex
from hindsight_core.write.outbox import VECTOR, ApplyReport

log = logging.getLogger("hindsight.verify")

#: Memories probed per namespace and layer: the newest ones, plus a random draw from the rest. 60 draws
#: see at least one miss of an index hiding 5 % of its memories 19 times in 20 (0.95 ** 60 < 0.05), which
#: escalates to probing the whole namespace; 20 let an index hiding 16 % pass 1 time in 30.
PROBE_RECENT = 5
PROBE_RANDOM = 55
#: A memory must be among this many hits for its own vector...
PROBE_DEPTH = 10
#: ...unless that many exact duplicates (cosine ~1) crowd it out, which is a correct answer.
_SAME = 1e-3
#: Share of the sample allowed to miss before the index counts as answering wrongly.
PROBE_MISS_TOLERANCE = 0.2
#: A namespace and layer up to this size is probed whole when its sample shows a miss...
PROBE_EXHAUSTIVE_LIMIT = 5_000
#: ...and then may miss this share of its memories (a healthy HNSW index misses about 1-2 % here).
PROBE_EXHAUSTIVE_TOLERANCE = 0.03
_RAISED = "query raised"


@dataclass
class ReconcileReport(ApplyReport):
    """What ``reconcile(verify=True)`` did on top of applying the outbox.

    ``rebuilt`` maps ``"layer:namespace"`` (or ``"layer:*"`` when the whole layer's collection had to
    be rebuilt) to why the index failed its probe."""

    probed: int = 0
    rebuilt: dict[str, str] = field(default_factory=dict)

    def absorb(self, other: ApplyReport) -> None:
        self.applied += other.applied
        self.failed += other.failed
        self.errors.update(other.errors)


def _misses(
    index: VectorIndex, namespace: str, layer: str, samples: Mapping[str, np.ndarray]
) -> tuple[str | None, list[str]]:
    """``(why a query raised or None, the sampled memories not found by their own vector)``."""
    missed: list[str] = []
    for memory_id, vector in samples.items():
        try:
            hits = index.query(namespace, layer, vector, PROBE_DEPTH)
        except Exception as exc:  # a corrupt index raises from inside the backend
            return f"{_RAISED} {type(exc).__name__}: {exc}", missed
        if memory_id in {h.memory_id for h in hits}:
            continue
        if len(hits) >= PROBE_DEPTH and all(h.similarity >= 1.0 - _SAME for h in hits):
            continue
        missed.append(memory_id)
    return None, missed


def probe(index: VectorIndex, namespace: str, layer: str, samples: Mapping[str, np.ndarray],
          tolerance: float = PROBE_MISS_TOLERANCE) -> str | None:
    """Why ``index`` answers wrongly for ``samples`` (memory id -> its stored vector), or ``None``.

    Any query that raises fails the probe. Misses are tolerated up to ``tolerance`` of the sample: HNSW
    is approximate, and a healthy index occasionally misses, which must not trigger a rebuild; an index
    that answers wrongly misses most of them."""
    return _judge(*_misses(index, namespace, layer, samples), len(samples), tolerance)


def _judge(raised: str | None, missed: list[str], probed: int, tolerance: float) -> str | None:
    if raised is not None:
        return raised
    if len(missed) > tolerance * probed:
        return (f"{len(missed)} of {probed} probed memories are not among the top {PROBE_DEPTH} hits "
                f"for their own vector (e.g. {missed[0]})")
    return None


def _probe_namespace(store: RelationalStore, index: VectorIndex, embedder_name: str, namespace: str,
                     layer: str, sampled: Mapping[str, np.ndarray]) -> str | None:
    """:func:`probe` of the sample, escalated: a sample that passed but missed some memories says little
    about a damaged index that hides a few percent of them, so where the namespace is small enough every
    memory is probed, with a tighter bar."""
    raised, missed = _misses(index, namespace, layer, sampled)
    if (why := _judge(raised, missed, len(sampled), PROBE_MISS_TOLERANCE)) is not None or not missed:
        return why
    ids = store.indexed_ids(namespace, layer, limit=PROBE_EXHAUSTIVE_LIMIT + 1)
    if len(ids) > PROBE_EXHAUSTIVE_LIMIT:
        return None
    return probe(index, namespace, layer, store.get_embeddings(embedder_name, ids), PROBE_EXHAUSTIVE_TOLERANCE)


def _samples(store: RelationalStore, embedder_name: str, namespace: str, layer: str) -> dict[str, np.ndarray]:
    size = PROBE_RECENT + PROBE_RANDOM
    ids = store.indexed_ids(namespace, layer, order="newest", limit=PROBE_RECENT)
    ids += store.indexed_ids(namespace, layer, order="random", limit=size)  # may repeat recent ones: draw enough
    return store.get_embeddings(embedder_name, list(dict.fromkeys(ids))[:size])


#: Rebuilds ``(namespaces, layer)`` from the store: queues a vector sync of every memory they should hold
#: and applies it (the engine's unit of work; this module writes nothing itself).
Resync = Callable[[list[str], str], ApplyReport]


def expected_ids(store: RelationalStore, namespace: str, layer: str) -> list[str]:
    """Every memory the vector index should hold for ``namespace`` and ``layer``."""
    return store.indexed_ids(namespace, layer)


def verify_vectors(store: RelationalStore, index: VectorIndex, embedder_name: str, resync: Resync) -> ReconcileReport:
    """Probe every namespace and layer; rebuild what answers wrongly; report it."""
    report = ReconcileReport()
    namespaces = store.namespaces()
    for layer in (lay.value for lay in PERSISTENT_LAYERS):
        samples = {ns: _samples(store, embedder_name, ns, layer) for ns in namespaces}
        report.probed += sum(len(s) for s in samples.values())
        broken = {
            ns: why for ns in namespaces
            if (why := _probe_namespace(store, index, embedder_name, ns, layer, samples[ns])) is not None
        }
        if not broken:
            continue
        log.warning("reconcile: vector index answers wrongly for %d namespace(s) of %s; rebuilding: %s",
                    len(broken), layer, broken)
        still: dict[str, str] = {}
        reset = getattr(index, "reset_layer", None)
        if callable(reset) and any(why.startswith(_RAISED) for why in broken.values()):
            still = dict(broken)  # a query that raises is the collection's segment, not one namespace
        for ns, why in broken.items():
            if ns in still:
                continue
            try:
                index.drop_namespace(ns, [layer])
                report.absorb(resync([ns], layer))
            except Exception as exc:
                still[ns] = f"{why}; namespace rebuild failed: {type(exc).__name__}: {exc}"
                continue
            if probe(index, ns, layer, samples[ns]) is None:
                report.rebuilt[f"{layer}:{ns}"] = why
            else:
                still[ns] = why
        if still and callable(reset):
            log.warning("reconcile: rebuilding the whole %s vector collection", layer)
            reset(layer)
            report.absorb(resync(namespaces, layer))
            report.rebuilt[f"{layer}:*"] = "; ".join(f"{ns}: {why}" for ns, why in still.items())
            still = {ns: why for ns in still if (why := probe(index, ns, layer, samples[ns])) is not None}
        for ns, why in still.items():
            report.errors[f"{VECTOR}:{layer}:{ns}"] = f"still answers wrongly after a rebuild: {why}"
    return report
