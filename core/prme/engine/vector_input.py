"""What the vector channel embeds for a record: its sentences, each as the reader sees it.

A conversational turn often holds several thoughts ("Wow, great news! I just signed up for a
pottery class yesterday. It's like therapy for me."). One vector of the whole text lets
whatever dominates it speak for all of it; the mean of one vector per sentence keeps each
sentence's topic in the record's vector. Sentences of fewer than `MIN_SEGMENT_WORDS` words
("Wow, great news!") are left out of the vector (never out of the record or the lexical
index): they carry little topic and pull every record towards small talk. Measured in
docs/quality.md ("Sentence vectors").
"""

from __future__ import annotations

import re
from typing import Literal

from prme.model.records import MemoryNode

VectorText = Literal["speaker_then_content", "content"]
VectorSegments = Literal["sentences", "whole"]

MIN_SEGMENT_WORDS = 5
# A long document is embedded from its first sentences; more cost tokens for little gain.
MAX_SEGMENTS = 32
# A sentence ends at ., ! or ? followed by white space; a line break always ends one.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def vector_text(node: MemoryNode, policy: VectorText = "speaker_then_content") -> str:
    """The whole record as the vector channel reads it: the speaker first, as a reader sees
    it (`Ana: I booked the trip`), unless the text already begins with the name. The speaker
    is not a keyword field (a name written only in speaker does not match lexical search)."""
    return _as_read(node, node.content, policy)


def vector_segments(
    node: MemoryNode,
    policy: VectorText = "speaker_then_content",
    segmenting: VectorSegments = "sentences",
) -> list[str]:
    """The texts whose vectors' mean is the record's own vector (at least one)."""
    if segmenting == "whole":
        return [vector_text(node, policy)]
    sentences = [s for s in _SENTENCE_BREAK.split(node.content.strip()) if s]
    kept = [s for s in sentences if len(s.split()) >= MIN_SEGMENT_WORDS]
    if not kept:
        return [vector_text(node, policy)]
    return [_as_read(node, sentence, policy) for sentence in kept[:MAX_SEGMENTS]]


def _as_read(node: MemoryNode, text: str, policy: VectorText) -> str:
    speaker = node.speaker
    if policy == "speaker_then_content" and speaker and not text.startswith(speaker):
        return f"{speaker}: {text}"
    return text
