"""Namespace-wide statistics of the scored channels, without a pass over the namespace.

Score fusion (``fusion.zsum``) standardises the cosine and BM25 of its candidates by the mean and
spread of that channel over every memory of the namespace. Computing every memory's score to get them
made recall linear in the namespace (the cosine of each of 100k vectors alone cost 5x an ANN query).
Both follow from what is known without that pass:

- the cosine ``q·x`` over the snapshot's vectors has mean ``q·μ`` and variance ``qᵀΣq`` (``μ`` the mean
  vector, ``Σ`` the covariance): ``VectorMoments`` keeps ``μ`` and the scatter matrix ``nΣ`` per
  snapshot, combined exactly when rows are appended, so a query costs O(d²) whatever the size; the rows
  a chat's writes append are kept aside (a view) and their cosines combined with the kept moments at
  query time, so a write does not pay a d x d update;
- BM25 is zero for every document that holds none of the query's terms, so its moments are sums over
  the documents the keyword index already walks (``Spread.of_sparse``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Spread:
    """A channel's mean and standard deviation (population, as ``np.std``) over the namespace."""

    mean: float
    std: float

    @staticmethod
    def of(values: np.ndarray) -> Spread:
        """Of every value given (the whole namespace's scores at hand)."""
        values = np.asarray(values, dtype=np.float64)
        return Spread(float(values.mean()), float(values.std())) if values.size else Spread(0.0, 0.0)

    @staticmethod
    def of_sparse(values: np.ndarray, size: int) -> Spread:
        """Of ``size`` scores of which only ``values`` are non-zero (centred sums: no cancellation)."""
        if size <= 0:
            return Spread(0.0, 0.0)
        values = np.asarray(values, dtype=np.float64)
        mean = float(values.sum()) / size
        squares = float(np.square(values - mean).sum()) + (size - values.size) * mean * mean
        return Spread(mean, math.sqrt(max(squares / size, 0.0)))

    def standardise(self, values: np.ndarray) -> np.ndarray:
        """``values`` in standard deviations from the mean; zeros when the channel does not vary."""
        values = np.asarray(values, dtype=np.float64)
        return (values - self.mean) / self.std if self.std > 0 else np.zeros_like(values)


@dataclass(frozen=True)
class VectorMoments:
    """Count, mean and scatter (sum of the outer products of the centred rows) of a snapshot's vectors.

    A new snapshot combines its predecessor's moments with those of its appended rows (Chan et al.'s
    pairwise update), so a write never revisits the namespace. Rows appended one write at a time are
    first kept as ``tail`` (a view of the snapshot's vectors, no copy) and folded into the scatter once
    there are ``TAIL`` of them: a d x d update per write (147k floats at d=384) was a third of what a
    recall right after a write paid for its new snapshot, and :meth:`spread` combines the tail's cosines
    with the folded moments in O(tail·d)."""

    count: int  # rows folded into ``mean`` and ``scatter``
    mean: np.ndarray  # (d,) float64
    scatter: np.ndarray  # (d, d) float64; (0, 0) while nothing is folded
    #: Rows after the folded ones, not in ``mean`` or ``scatter`` yet.
    tail: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))

    #: Rows per block when a whole namespace is summed (bounds the temporary centred copy).
    BLOCK = 8192
    #: Rows kept unfolded at most: folding them costs one (TAIL x d) product, and a query O(TAIL·d).
    TAIL = 256

    @property
    def rows(self) -> int:
        """Rows these moments describe, folded or not."""
        return self.count + len(self.tail)

    def of(self, vectors: np.ndarray) -> VectorMoments:
        """The moments of ``vectors``, a snapshot's rows whose first :attr:`rows` these moments already
        describe (an append's new snapshot): the new rows join the tail, a view of ``vectors``."""
        if len(vectors) - self.count >= self.TAIL:
            return self.folded().plus(vectors[self.rows :])
        return VectorMoments(self.count, self.mean, self.scatter, vectors[self.count :])

    def folded(self) -> VectorMoments:
        """The same moments with the tail folded in."""
        if not len(self.tail):
            return self
        return VectorMoments(self.count, self.mean, self.scatter).plus(self.tail)

    @staticmethod
    def empty(dim: int) -> VectorMoments:
        """No rows, and no scatter matrix until rows are folded: a namespace of fewer than ``TAIL``
        memories (most users') is all tail, and a d x d matrix of zeros beside it was 1.2 MB at d=384 for
        each snapshot kept, eight times its hundred memories' vectors."""
        return VectorMoments(0, np.zeros(dim, dtype=np.float64), np.zeros((0, 0), dtype=np.float64))

    def plus(self, rows: np.ndarray) -> VectorMoments:
        """These moments with ``rows`` appended, all folded."""
        out = self.folded()
        for start in range(0, len(rows), self.BLOCK):
            out = out._combined(rows[start : start + self.BLOCK])
        return out

    def _combined(self, rows: np.ndarray) -> VectorMoments:
        k = len(rows)
        if k == 0:
            return self
        mean = rows.mean(axis=0, dtype=np.float64)
        # one row's scatter about its own mean is zero: a chat turn's write skips the product, and the
        # sums below build the d x d result in one buffer (each temporary is a megabyte at d=384)
        scatter: np.ndarray | None = None
        if k > 1:
            centred = (rows - mean).astype(np.float32)  # centred, float32 loses nothing that matters
            scatter = (centred.T @ centred).astype(np.float64)
        if self.count:
            n = self.count
            delta = mean - self.mean
            previous = np.outer(delta, delta)
            previous *= n * k / (n + k)
            previous += self.scatter
            if scatter is None:
                scatter = previous
            else:
                scatter += previous
            mean = self.mean + delta * (k / (n + k))
        elif scatter is None:
            scatter = np.zeros((len(mean), len(mean)), dtype=np.float64)
        return VectorMoments(self.count + k, mean, scatter)

    def spread(self, query: np.ndarray) -> Spread:
        """Mean and standard deviation of ``query · x`` over the rows."""
        if not self.rows:
            return Spread(0.0, 0.0)
        q = np.asarray(query, dtype=np.float64)
        n, mean = self.count, float(q @ self.mean) if self.count else 0.0
        squares = float(q @ self.scatter @ q) if self.count else 0.0  # n x variance
        if len(self.tail):  # the two groups' cosines combined (Chan et al.), in one dimension
            values = self.tail @ q
            k, own = len(values), float(values.mean())
            delta = own - mean
            squares += float(np.square(values - own).sum()) + delta * delta * n * k / (n + k)
            n, mean = n + k, mean + delta * k / (n + k)
        return Spread(mean, math.sqrt(max(squares / n, 0.0)))
