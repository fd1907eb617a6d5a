"""Packing counts a record's head and body apart (the body's count is cached across
retrievals); that is exact only because cl100k splits words at the same place."""

from __future__ import annotations

import pytest

from prme.retrieval.tokens import Cl100kTokenCounter

COUNTER = Cl100kTokenCounter()
BODIES = [
    "Caroline: I went to the support group yesterday.",
    "(laughs) ok",
    "'s fine",
    "'ll do it",
    "123 apples and 4,500 pears",
    "...well",
    "\U0001f642 great",
    "  two spaces",
    "\tTab",
    "ça va",
    "日本語のテキスト",
    "]bracket",
    "\nnew line",
    "",
]


@pytest.mark.parametrize("head", ["[m7]", "[m123] 2023-05-08 13:56"])
@pytest.mark.parametrize("text", BODIES)
def test_head_and_body_counts_add_up_to_the_line(head: str, text: str) -> None:
    body = f" {text}"
    assert COUNTER.count(head) + COUNTER.count(body) == COUNTER.count(head + body)


def test_cached_counts_equal_fresh_counts() -> None:
    fresh = Cl100kTokenCounter()
    for text in BODIES:
        assert COUNTER.count(text) == fresh.count(text) == COUNTER.count(text)
