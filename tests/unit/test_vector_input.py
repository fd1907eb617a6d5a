"""What the vector channel embeds for a record: its sentences, each as the reader sees it."""

from __future__ import annotations

import numpy as np
import pytest

from prme.embedding.hashing import HashingEmbedder
from prme.engine.vector_input import MAX_SEGMENTS, vector_segments, vector_text
from prme.model.inputs import StoreInput
from prme.model.records import SPEAKER_METADATA_KEY, MemoryNode
from prme.model.search import IndexQuery
from tests.harness.engines import ALICE, memory_harness
from tests.harness.records import note_node


def node(content: str, speaker: str | None = "Ana") -> MemoryNode:
    return note_node(content, metadata={SPEAKER_METADATA_KEY: speaker} if speaker else {})


def test_each_sentence_of_five_words_or_more_is_a_segment_with_the_speaker() -> None:
    record = node(
        "Wow, great news! I just signed up for a pottery class. It is like therapy for me."
    )
    assert vector_segments(record) == [
        "Ana: I just signed up for a pottery class.",
        "Ana: It is like therapy for me.",
    ]


def test_a_record_without_a_long_sentence_is_one_segment_as_before() -> None:
    record = node("Thanks! See you soon.")
    assert vector_segments(record) == [vector_text(record)] == ["Ana: Thanks! See you soon."]


def test_line_breaks_end_sentences_and_whole_keeps_one_text() -> None:
    record = node("Groceries for the week ahead\nmilk eggs bread butter and some cheese")
    assert vector_segments(record, "content") == [
        "Groceries for the week ahead",
        "milk eggs bread butter and some cheese",
    ]
    assert vector_segments(record, segmenting="whole") == [vector_text(record)]


def test_speaker_is_not_repeated_and_records_without_one_are_plain() -> None:
    assert vector_segments(node("Ana: I booked the trip to Lisbon today.")) == [
        "Ana: I booked the trip to Lisbon today."
    ]
    assert vector_segments(node("I booked the trip to Lisbon today.", None)) == [
        "I booked the trip to Lisbon today."
    ]


def test_long_documents_are_embedded_from_their_first_sentences() -> None:
    text = " ".join(f"Sentence number {i} has enough words." for i in range(MAX_SEGMENTS + 5))
    segments = vector_segments(node(text, None))
    assert len(segments) == MAX_SEGMENTS
    assert segments[0] == "Sentence number 0 has enough words."


def test_the_generic_segmented_embedding_is_the_normalised_mean() -> None:
    embedder = HashingEmbedder(dimension=32)
    groups = [["red apples grow here", "blue skies over water"], ["one more"]]
    vectors = embedder.embed_segmented(groups)
    first = embedder.embed(groups[0]).mean(axis=0)
    assert np.allclose(vectors[0], first / np.linalg.norm(first), atol=1e-6)
    assert np.allclose(vectors[1], embedder.embed(groups[1])[0], atol=1e-6)
    with pytest.raises(ValueError, match="at least one segment"):
        embedder.embed_segmented([[]])


def test_indexing_searches_the_mean_of_the_sentence_vectors_not_the_whole_text() -> None:
    h = memory_harness()
    content = "Wow! We went camping by the lake last weekend. The kids loved the huge campfire."
    stored = h.engine.store(ALICE, StoreInput(content=content, speaker="Ana"))
    node_id = stored.node_id
    assert node_id is not None
    record = h.engine.get_node(ALICE, node_id)
    sentences = h.embedder.embed_segmented([vector_segments(record)])[0]
    whole = h.embedder.embed([vector_text(record)])[0]
    assert float(sentences @ whole) < 0.99  # the two rules give different vectors

    def cosine_in_index(query: np.ndarray) -> float:
        hits = h.index.search(
            ALICE,
            IndexQuery(
                text="zzz",
                vector=tuple(float(x) for x in query),
                embedding_model=h.embedder.model.key,
                vector_k=5,
            ),
        )
        return hits.semantic[node_id]

    assert cosine_in_index(sentences) == pytest.approx(1.0, abs=1e-6)
    assert cosine_in_index(whole) < 0.99
