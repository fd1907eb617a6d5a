"""A deterministic feature-hashing embedder, for unit tests only: fast, no dependencies."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from prme.embedding.segments import embed_segmented_each
from prme.model.search import EmbeddingModelInfo

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Signed feature hashing of lowercased word tokens, L2-normalised; FOR UNIT TESTS ONLY.

    Texts sharing words get similar vectors, which is enough to exercise ranking code, but the
    vectors carry no meaning. Empty text (or text without word characters) gives a zero vector.
    `name` changes the model key so tests can create a second, incompatible vector space.
    """

    def __init__(self, dimension: int = 64, *, name: str = "prme/hashing") -> None:
        if dimension < 1:
            raise ValueError("dimension must be at least 1")
        self._dimension = dimension
        self._info = EmbeddingModelInfo(name=name, version="1", dimension=dimension)

    @property
    def model(self) -> EmbeddingModelInfo:
        return self._info

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                # The low bit picks the sign, so collisions cancel out on average instead of
                # piling up in one direction.
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self._dimension] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # Rows with norm 0 stay zero rather than turning into NaN.
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_segmented(self, groups: Sequence[Sequence[str]]) -> NDArray[np.float32]:
        return embed_segmented_each(self.embed, groups)
