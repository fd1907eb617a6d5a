"""A fresh `MemoryClient` for one benchmark case or conversation: in a temporary directory, or
on new resources of the local AWS that are deleted afterwards."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.local_aws import fresh_aws
from prme.client import MemoryClient
from prme.settings import Settings


@contextmanager
def embedded_client(settings: Settings, name: str) -> Iterator[MemoryClient]:
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as tmp:
        client = MemoryClient(Path(tmp) / "memory", settings=settings)
        try:
            yield client
        finally:
            client.close()


@contextmanager
def aws_client(settings: Settings, name: str) -> Iterator[MemoryClient]:
    """Writes wait for OpenSearch visibility (refresh on write), so every turn stored is
    searchable when the question comes."""
    from prme.composition import build_embedder

    dimension = build_embedder(settings).model.dimension
    visible = settings.model_copy(update={"opensearch_refresh_on_write": True})
    with fresh_aws(visible, name, dimension=dimension) as (fresh, _):
        client = MemoryClient(settings=fresh)
        try:
            yield client
        finally:
            client.close()
