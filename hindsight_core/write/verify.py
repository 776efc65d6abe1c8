"""Verification that the vector index answers correctly, not only that it holds the right ids.

A Chroma directory that two processes wrote can hold every expected id (its metadata is intact) and
still fail or mis-answer queries, because its HNSW segment no longer matches the metadata (``Error
finding id``), or has lost whole batches that another process flushed over. Comparing id sets cannot
see that, so ``reconcile(verify=True)`` also probes: each memory is looked up with its own stored vector
(the ``embeddings`` table, so no re-embedding) and must come back without the query raising.

A miss is told from approximation by asking again, deeper: a healthy HNSW index may leave a memory out
of its top ``PROBE_DEPTH`` for its own vector, but not out of its top ``RECHECK_DEPTH`` (the search
widens with the depth asked for); a memory missing there is lost to vector recall, and one lost memory
is enough to rebuild. A tolerance instead would let an index that lost a few batches pass (1.7 % of a
namespace lost went unnoticed before; a healthy index here misses none of 2,400 at depth 10).

Cost is bounded: a namespace and layer up to ``PROBE_WHOLE_LIMIT`` memories is probed whole, in batched
queries (about 0.1-0.4 ms a memory); a larger one by its ``PROBE_RECENT`` newest memories (a concurrent
writer damages what was written last) and a random draw of ``PROBE_RANDOM`` more.

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
from hindsight_core.vectors.base import VectorHit, VectorIndex
from hindsight_core.write.outbox import VECTOR, ApplyReport

log = logging.getLogger("hindsight.verify")

#: A namespace and layer up to this size is probed whole...
PROBE_WHOLE_LIMIT = 5_000
#: ...a larger one by its newest memories and a random draw from the rest: 60 draws see at least one
#: lost memory of an index that lost 5 % 19 times in 20 (0.95 ** 60 < 0.05).
PROBE_RECENT = 5
PROBE_RANDOM = 55
#: A memory is looked up among this many hits for its own vector, and a miss again among the deeper
#: count, where HNSW's search is wide enough to find any memory its graph still reaches.
PROBE_DEPTH = 10
RECHECK_DEPTH = 100
#: Vectors per batched query.
PROBE_BATCH = 200
#: Hits this close to the query's own vector (cosine ~1: exact duplicates) may crowd a memory out of a
#: full answer, which is a correct answer.
_SAME = 1e-3
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


def _query_many(index: VectorIndex, namespace: str, layer: str, vectors: np.ndarray, n: int) -> list[list[VectorHit]]:
    batched = getattr(index, "query_many", None)  # not part of VectorIndex: one query each otherwise
    if callable(batched):
        out: list[list[VectorHit]] = []
        for start in range(0, len(vectors), PROBE_BATCH):
            out += batched(namespace, layer, vectors[start : start + PROBE_BATCH], n)
        return out
    return [index.query(namespace, layer, vector, n) for vector in vectors]


def _missing(index: VectorIndex, namespace: str, layer: str, samples: Mapping[str, np.ndarray], n: int) -> list[str]:
    """The memories of ``samples`` not among the top ``n`` hits for their own vector with that vector
    (similarity ~1: an entry holding another vector under the memory's id is found, and wrong), nor
    crowded out of a full answer by exact duplicates."""
    if not samples:
        return []
    ids = list(samples)
    answers = _query_many(index, namespace, layer, np.stack([samples[mid] for mid in ids]), n)
    return [mid for mid, hits in zip(ids, answers, strict=True)
            if not any(h.memory_id == mid and h.similarity >= 1.0 - _SAME for h in hits)
            and not (len(hits) >= n and all(h.similarity >= 1.0 - _SAME for h in hits))]


def probe(index: VectorIndex, namespace: str, layer: str, samples: Mapping[str, np.ndarray]) -> str | None:
    """Why ``index`` answers wrongly for ``samples`` (memory id -> its stored vector), or ``None``: a
    query raised, or a memory is not found by its own vector, with it, even at ``RECHECK_DEPTH``."""
    try:
        shallow = _missing(index, namespace, layer, samples, PROBE_DEPTH)
        lost = _missing(index, namespace, layer, {mid: samples[mid] for mid in shallow}, RECHECK_DEPTH)
    except Exception as exc:  # a corrupt index raises from inside the backend
        return f"{_RAISED} {type(exc).__name__}: {exc}"
    if lost:
        return (f"{len(lost)} of {len(samples)} probed memories are not among the top {RECHECK_DEPTH} hits "
                f"for their own vector (e.g. {lost[0]})")
    return None


def _samples(store: RelationalStore, embedder_name: str, namespace: str, layer: str) -> dict[str, np.ndarray]:
    ids = store.indexed_ids(namespace, layer, limit=PROBE_WHOLE_LIMIT + 1)
    if len(ids) > PROBE_WHOLE_LIMIT:
        size = PROBE_RECENT + PROBE_RANDOM
        ids = store.indexed_ids(namespace, layer, order="newest", limit=PROBE_RECENT)
        ids += store.indexed_ids(namespace, layer, order="random", limit=size)  # may repeat recent ones
        ids = list(dict.fromkeys(ids))[:size]
    return store.get_embeddings(embedder_name, ids)


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
        broken: dict[str, str] = {}
        samples: dict[str, dict[str, np.ndarray]] = {}  # kept for the broken only: probed again after
        for ns in namespaces:
            sampled = _samples(store, embedder_name, ns, layer)
            report.probed += len(sampled)
            if (why := probe(index, ns, layer, sampled)) is not None:
                broken[ns], samples[ns] = why, sampled
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
