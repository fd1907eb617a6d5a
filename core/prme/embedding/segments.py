"""One vector for a text embedded in segments: the normalised mean of the segments' vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray


def mean_by_group(
    vectors: NDArray[np.float32], owners: Sequence[int], count: int
) -> NDArray[np.float32]:
    """Row g of the result is the L2-normalised mean of the rows `owners` assigns to g
    (a group whose mean has no direction stays zero)."""
    rows = vectors.astype(np.float64)
    starts = _group_starts(owners, count)
    if starts is not None:
        # Each group's rows in a run: summed in row order, as `add.at` sums them, in one call
        # instead of one scattered add per row.
        sums = np.add.reduceat(rows, starts, axis=0)
    else:
        sums = np.zeros((count, vectors.shape[1]), dtype=np.float64)
        np.add.at(sums, np.asarray(owners, dtype=np.int64), rows)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    np.divide(sums, norms, out=sums, where=norms > 0)
    return sums.astype(np.float32)


def _group_starts(owners: Sequence[int], count: int) -> list[int] | None:
    """Where each group's rows begin when the rows come group by group (0, 0, 1, 2, 2, ...)
    and every group has at least one; None otherwise."""
    starts: list[int] = []
    for position, owner in enumerate(owners):
        if owner == len(starts):
            starts.append(position)
        elif owner != len(starts) - 1:
            return None
    return starts if len(starts) == count else None


def embed_segmented_each(
    embed: Callable[[Sequence[str]], NDArray[np.float32]], groups: Sequence[Sequence[str]]
) -> NDArray[np.float32]:
    """`Embedder.embed_segmented` for an embedder without a packed form: every segment is
    one text of a single `embed` call."""
    if any(len(group) == 0 for group in groups):
        raise ValueError("every group needs at least one segment")
    texts = [text for group in groups for text in group]
    owners = [g for g, group in enumerate(groups) for _ in group]
    return mean_by_group(embed(texts), owners, len(groups))
