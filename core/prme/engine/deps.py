"""The ports and configuration one engine instance works with."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from prme.engine.config import EngineConfig
from prme.engine.limits import LimitGate
from prme.engine.profile_cache import ActiveProfileCache
from prme.ports import (
    Clock,
    Embedder,
    Extractor,
    ImportJobStore,
    ImportQueue,
    Ledger,
    RankingProfileStore,
    SearchIndex,
    UploadStore,
    UsageLog,
    WorkQueue,
)
from prme.retrieval.tokens import TokenCounter


def new_id() -> str:
    return str(uuid.uuid4())


def _default_extractor() -> Extractor:
    from prme.extraction.rules import RuleExtractor

    return RuleExtractor()


@dataclass(frozen=True)
class EngineDeps:
    ledger: Ledger
    index: SearchIndex
    queue: WorkQueue
    embedder: Embedder
    clock: Clock
    token_counter: TokenCounter
    config: EngineConfig = field(default_factory=EngineConfig)
    ids: Callable[[], str] = new_id
    extractor: Extractor = field(default_factory=_default_extractor)
    # Per-tenant limits; None counts nothing (every limit unlimited).
    limits: LimitGate | None = None
    # Bulk imports (engine/imports.py); a backend without them refuses those operations.
    imports: ImportJobStore | None = None
    import_queue: ImportQueue | None = None
    # Where large imports' files are uploaded (engine/import_uploads.py); None: inline only.
    uploads: UploadStore | None = None
    # Where metered usage is recorded; None meters nothing (and /v1/usage reads as empty).
    usage: UsageLog | None = None
    # Learned ranking profiles (engine/ranking_profiles.py); None: no profile ranks anything
    # and the profile operations are not served.
    ranking_profiles: RankingProfileStore | None = None
    # The owners' active profiles as retrievals read them (ranking_profile_cache_seconds).
    profile_cache: ActiveProfileCache = field(default_factory=ActiveProfileCache)
