"""The ports and configuration one engine instance works with."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from prme.engine.config import EngineConfig
from prme.ports import Clock, Embedder, Ledger, SearchIndex, WorkQueue
from prme.retrieval.tokens import TokenCounter


def new_id() -> str:
    return str(uuid.uuid4())


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
