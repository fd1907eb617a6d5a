"""The composition root: the one place that chooses adapters and builds engines from settings."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.engine.credentials import CredentialService
from prme.engine.limits import LimitGate
from prme.engine.service import MemoryEngine
from prme.ports import Embedder, Extractor
from prme.settings import Settings, default_cache_dir

# A Converse answer takes seconds, a long extraction most of a minute. Without a deadline an
# attempt and one retry, hung to these timeouts, still end well inside the extractor
# function's timeout (`resources.queue_specs()["extract"]`), leaving time to embed, index and
# commit what was extracted; a unit test holds the two together. Under a deadline the client
# takes the longest step that fits what is left (deadline_clients).
EXTRACTION_CONNECT_TIMEOUT_S = 3.0
EXTRACTION_READ_TIMEOUT_S = 40.0
EXTRACTION_ATTEMPTS = 2
EXTRACTION_STEPS = (40.0, 20.0)


class Backend(Protocol):
    """What every composed backend offers its edge."""

    @property
    def engine(self) -> MemoryEngine: ...

    @property
    def credentials(self) -> CredentialService: ...

    def close(self) -> None: ...


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "bedrock":
        import boto3

        from prme.backends.aws.deadline_clients import DeadlineBoundClient
        from prme.embedding.bedrock import BedrockEmbedder

        return BedrockEmbedder(
            DeadlineBoundClient(lambda config: boto3.client("bedrock-runtime", config=config)),
            settings.bedrock_embedding_model_id,
            settings.bedrock_embedding_dimension,
        )
    if settings.embedder == "hashing":
        from prme.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    from prme.embedding.minilm import MiniLmEmbedder, require_model_files

    # Here, not on the first embed: a store would otherwise be refused only after its
    # caller had set everything up, and a worker would keep deferring work that cannot run.
    require_model_files()
    return MiniLmEmbedder(
        precision=settings.minilm_precision,
        cache_dir=settings.model_cache_dir or default_cache_dir(),
    )


def build_extractor(settings: Settings) -> Extractor:
    """The extractor the settings name; LLM providers are built only when chosen."""
    if settings.extractor == "bedrock":
        import boto3

        from prme.backends.aws.deadline_clients import STEPS, DeadlineBoundClient
        from prme.extraction.bedrock import BedrockConverseExtractor

        client = DeadlineBoundClient(
            lambda config: boto3.client("bedrock-runtime", config=config),
            connect_timeout_s=EXTRACTION_CONNECT_TIMEOUT_S,
            read_timeout_s=EXTRACTION_READ_TIMEOUT_S,
            total_attempts=EXTRACTION_ATTEMPTS,
            steps=(*EXTRACTION_STEPS, *STEPS),
        )
        return BedrockConverseExtractor(client, settings.bedrock_extraction_model_id)
    if settings.extractor == "openai":
        import httpx

        from prme.extraction.openai_compatible import OpenAiCompatibleExtractor

        if not settings.openai_base_url or not settings.openai_model:
            raise ValueError("PRME_OPENAI_BASE_URL and PRME_OPENAI_MODEL are required")
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        return OpenAiCompatibleExtractor(
            httpx.Client(), settings.openai_base_url, settings.openai_model, key
        )
    from prme.extraction.rules import RuleExtractor

    return RuleExtractor()


def open_embedded_from_settings(
    settings: Settings, data_dir: Path | None = None
) -> EmbeddedBackend:
    backend = open_embedded(
        data_dir or settings.data_dir,
        embedder=build_embedder(settings),
        extractor=build_extractor(settings),
        config=settings.engine,
        synchronous=settings.sqlite_synchronous,
        limits=settings.limits,
        vector_search=settings.vector_search,
    )
    _load_in_background(backend.engine.deps.token_counter)
    return backend


def _load_in_background(dependency: object) -> None:
    """Start loading `dependency` (the token counter's vocabulary: a tenth of a second or
    more, needed by every retrieval's packing) in a daemon thread: while the first call loads
    the embedding model (onnxruntime releases the GIL), or a server waits for its first
    request. A call that needs it first waits on the counter's own lock; a failure is left
    for that call to raise."""
    load = getattr(dependency, "load", None)
    if load is None:
        return

    def run() -> None:
        with contextlib.suppress(Exception):  # the foreground call raises it again
            load()

    threading.Thread(target=run, name="prme-token-counter-load", daemon=True).start()


def open_backend(settings: Settings, data_dir: Path | None = None) -> Backend:
    """The backend the settings name: embedded (default) or aws."""
    if settings.backend == "aws":
        from prme.backends.aws.service import open_aws

        return open_aws(
            settings, embedder=build_embedder(settings), extractor=build_extractor(settings)
        )
    return open_embedded_from_settings(settings, data_dir)


def open_limits(
    settings: Settings, data_dir: Path | None = None
) -> tuple[LimitGate, Callable[[], None]]:
    """Per-tenant limits alone, for the provider's `prme limits`: the limits file of the data
    directory, or the table; no embedder, index or queue is opened. Returns a close function."""
    if settings.backend == "aws":
        from prme.backends.aws.service import open_aws_limits

        return open_aws_limits(settings), lambda: None
    from prme.backends.clock import SystemClock
    from prme.backends.embedded.service import LIMITS_FILE
    from prme.backends.embedded.sqlite import private_directory
    from prme.backends.embedded.sqlite_limits import SqliteLimits

    directory = data_dir or settings.data_dir
    private_directory(directory)
    store = SqliteLimits(directory / LIMITS_FILE, synchronous=settings.sqlite_synchronous)
    return LimitGate(store, store, settings.limits, SystemClock()), store.close
