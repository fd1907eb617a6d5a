"""A record's vector from its segments' vectors: the normalised mean of its own rows, the
same whether the rows come group by group (the embedder's order) or interleaved."""

from __future__ import annotations

import numpy as np

from prme.embedding.segments import mean_by_group


def test_each_group_is_the_normalised_mean_of_its_rows() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((6, 384)).astype(np.float32)
    owners = [0, 0, 1, 2, 2, 2]
    result = mean_by_group(vectors, owners, 3)
    for group in range(3):
        rows = vectors[[i for i, owner in enumerate(owners) if owner == group]]
        mean = rows.astype(np.float64).sum(axis=0)
        expected = (mean / np.linalg.norm(mean)).astype(np.float32)
        assert np.array_equal(result[group], expected)


def test_grouped_and_interleaved_rows_give_the_same_vectors() -> None:
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((7, 384)).astype(np.float32)
    grouped = [0, 0, 0, 1, 1, 2, 2]
    order = [3, 0, 5, 1, 4, 6, 2]  # the same rows, groups interleaved
    interleaved = mean_by_group(vectors[order], [grouped[i] for i in order], 3)
    assert np.array_equal(mean_by_group(vectors, grouped, 3), interleaved)


def test_a_group_without_direction_stays_zero() -> None:
    vectors = np.array([[1.0, 2.0], [-1.0, -2.0], [3.0, 4.0]], dtype=np.float32)
    result = mean_by_group(vectors, [0, 0, 1], 2)
    assert np.array_equal(result[0], np.zeros(2, dtype=np.float32))
    assert np.allclose(result[1], [0.6, 0.8])
