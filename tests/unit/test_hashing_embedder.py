"""The hashing test embedder: deterministic, normalised, sized as configured, keyed by name."""

from __future__ import annotations

import numpy as np
import pytest

from prme.embedding.hashing import HashingEmbedder
from prme.ports import Embedder


def test_same_text_gives_the_same_vector_across_instances() -> None:
    texts = ["My sister lives in Lisbon", "I prefer tea over coffee"]
    first = HashingEmbedder().embed(texts)
    second = HashingEmbedder().embed(texts)
    assert np.array_equal(first, second)


def test_vectors_are_float32_unit_length_with_the_configured_dimension() -> None:
    vectors = HashingEmbedder(dimension=32).embed(["alpha beta", "gamma", "a b c d e f g"])
    assert vectors.shape == (3, 32)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_default_dimension_is_64_and_recorded_in_the_model_info() -> None:
    embedder = HashingEmbedder()
    assert embedder.embed(["hello"]).shape == (1, 64)
    assert embedder.model.dimension == 64
    assert embedder.model.name == "prme/hashing"
    assert embedder.model.version == "1"


def test_tokens_are_lowercased_words_so_case_and_punctuation_do_not_matter() -> None:
    vectors = HashingEmbedder().embed(["Hello, World!", "hello world"])
    assert np.array_equal(vectors[0], vectors[1])


def test_shared_words_score_higher_than_unrelated_text() -> None:
    query, related, unrelated = HashingEmbedder(dimension=256).embed(
        ["coffee in the morning", "I drink coffee every morning", "quarterly billing migration"]
    )
    assert float(query @ related) > float(query @ unrelated)


@pytest.mark.parametrize("text", ["", "   ", "?!.,"])
def test_text_without_words_gives_a_zero_vector(text: str) -> None:
    vector = HashingEmbedder().embed([text])
    assert vector.shape == (1, 64)
    assert not np.any(vector)
    assert not np.any(np.isnan(vector))


def test_empty_input_gives_an_empty_matrix() -> None:
    assert HashingEmbedder(dimension=16).embed([]).shape == (0, 16)


def test_a_different_name_gives_a_different_model_key() -> None:
    default = HashingEmbedder()
    other = HashingEmbedder(name="prme/hashing-other")
    assert default.model.key != other.model.key
    assert HashingEmbedder().model.key == default.model.key


def test_a_different_dimension_gives_a_different_model_key() -> None:
    assert HashingEmbedder(dimension=32).model.key != HashingEmbedder(dimension=64).model.key


def test_dimension_must_be_positive() -> None:
    with pytest.raises(ValueError, match="dimension"):
        HashingEmbedder(dimension=0)


def test_satisfies_the_embedder_port() -> None:
    embedder: Embedder = HashingEmbedder()
    assert embedder.embed(["x"]).shape == (1, embedder.model.dimension)
