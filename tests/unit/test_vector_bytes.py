"""Vectors on the store path: the mix and the stored bytes are exactly what numpy computes."""

from __future__ import annotations

import math

import numpy as np

from prme.backends.embedded.sqlite_index import _blob, _from_blob
from prme.engine.indexing import session_context_vector


def unit(rng: np.random.Generator, dim: int = 384) -> tuple[float, ...]:
    v = rng.normal(size=dim).astype(np.float32)
    return tuple(float(x) for x in v / np.linalg.norm(v))


def test_stored_bytes_are_the_float32_bytes_numpy_writes() -> None:
    rng = np.random.default_rng(7)
    edges = (0.0, -0.0, 1e-46, 3.4028235e38, 3.4028236e38, 1e300, -math.inf, math.nan)
    for vector in [*(unit(rng) for _ in range(50)), edges]:
        with np.errstate(over="ignore"):
            expected = np.asarray(vector, dtype=np.float32).tobytes()
        assert _blob(vector) == expected


def test_a_stored_vector_reads_back_as_its_float32_values() -> None:
    vector = unit(np.random.default_rng(8))
    widened = np.asarray(vector, dtype=np.float32).astype(np.float64).tolist()
    stored = _blob(vector)
    assert stored is not None
    assert _from_blob(stored) == tuple(widened)
    assert _blob(None) is None


def test_the_mix_equals_numpys_normalized_sum_bit_for_bit() -> None:
    rng = np.random.default_rng(9)
    for weight in (0.6, 1.0, 4.0):
        for _ in range(50):
            own, before = unit(rng), unit(rng)
            mixed = np.asarray(own) + weight * np.asarray(before)
            expected = tuple((mixed / np.linalg.norm(mixed)).tolist())
            assert session_context_vector(own, before, weight) == expected
