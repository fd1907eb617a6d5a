"""The ports and configuration one engine instance works with."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from prme.engine.config import EngineConfig
from prme.ports import Clock, Embedder, Extractor, Ledger, SearchIndex, UsageLog, WorkQueue
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
    # Where metered usage is recorded; None meters nothing (and /v1/usage reads as empty).
    usage: UsageLog | None = None
