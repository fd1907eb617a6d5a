"""Builds engines from settings: the one place that chooses adapters."""

from __future__ import annotations

from pathlib import Path

from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.ports import Embedder
from prme.settings import Settings


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "hashing":
        from prme.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    from prme.embedding.minilm import MiniLmEmbedder

    return MiniLmEmbedder()


def open_embedded_from_settings(
    settings: Settings, data_dir: Path | None = None
) -> EmbeddedBackend:
    return open_embedded(
        data_dir or settings.data_dir,
        embedder=build_embedder(settings),
        config=settings.engine_config(),
        synchronous=settings.sqlite_synchronous,
    )
