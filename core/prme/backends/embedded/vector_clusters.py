"""`VectorClusters`: approximate nearest-neighbour search over one owner's vector matrix.

The rows are grouped around centroids found by spherical k-means on a sample; a query scores
the centroids, takes the rows of the `probe` nearest clusters, drops the rows the filter
mask rejects and scores what is left exactly. The matrix itself is not copied: clusters hold
row numbers. Recall against exact search is measured by `benchmarks/scale.py`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

# Training reads at most this many rows per cluster: enough for stable centroids, and the
# build stays a fraction of a second per 100k rows.
_SAMPLE_PER_CLUSTER = 40
_ITERATIONS = 8
# Rows scored per matrix product while assigning: bounds the temporary score matrix.
_ASSIGN_CHUNK = 8192


class VectorClusters:
    """Clusters of a matrix's rows; `shortlist` gives the rows of the nearest clusters."""

    def __init__(self, centroids: NDArray[np.float32], members: list[NDArray[np.intp]]) -> None:
        self.centroids = centroids
        self.members = members

    @classmethod
    def build(cls, matrix: NDArray[np.float32], *, seed: int = 0) -> VectorClusters:
        """About the square root of the row count clusters, trained on a seeded sample."""
        rows = len(matrix)
        count = max(1, math.isqrt(rows))
        rng = np.random.default_rng(seed)
        sample_size = min(rows, count * _SAMPLE_PER_CLUSTER)
        sample = matrix[np.sort(rng.choice(rows, sample_size, replace=False))]
        centroids = sample[rng.choice(sample_size, count, replace=False)].copy()
        for _ in range(_ITERATIONS):
            nearest = np.argmax(sample @ centroids.T, axis=1)
            sums = np.zeros_like(centroids)
            np.add.at(sums, nearest, sample)
            norms = np.linalg.norm(sums, axis=1)
            # An empty cluster keeps its centroid; the others move to their members' mean
            # direction (vectors are compared by cosine).
            filled = norms > 0
            centroids[filled] = sums[filled] / norms[filled, None]
        assigned = cls._nearest(matrix, centroids)
        order = np.argsort(assigned, kind="stable")
        bounds = np.searchsorted(assigned[order], np.arange(count + 1))
        members = [order[bounds[i] : bounds[i + 1]] for i in range(count)]
        return cls(centroids, members)

    @staticmethod
    def _nearest(matrix: NDArray[np.float32], centroids: NDArray[np.float32]) -> NDArray[np.intp]:
        return np.concatenate(
            [
                np.argmax(matrix[start : start + _ASSIGN_CHUNK] @ centroids.T, axis=1)
                for start in range(0, len(matrix), _ASSIGN_CHUNK)
            ]
            or [np.zeros(0, dtype=np.intp)]
        )

    def add(self, vectors: NDArray[np.float32], first_row: int) -> None:
        """Rows `first_row`, `first_row + 1`, ... (appended to the matrix) join their
        nearest clusters."""
        for offset, cluster in enumerate(self._nearest(vectors, self.centroids)):
            self.members[cluster] = np.append(self.members[cluster], first_row + offset)

    def shortlist(self, query: NDArray[np.float32], probe: int) -> NDArray[np.intp]:
        """The row numbers of the `probe` clusters whose centroids are nearest the query."""
        scores = np.einsum("ij,j->i", self.centroids, query)
        probe = min(probe, len(scores))
        nearest = np.argpartition(-scores, probe - 1)[:probe]
        return np.concatenate([self.members[i] for i in nearest])
