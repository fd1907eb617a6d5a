"""Engines for tests: the in-memory fakes or the embedded backend, each with a manual clock and
recorded work announcements, and the owners the tests store for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import open_embedded
from prme.backends.memory import (
    InMemoryCredentialStore,
    InMemoryImportJobStore,
    InMemoryIndex,
    InMemoryLedger,
    InMemoryRankingProfileStore,
    InMemoryUsageLog,
    RecordingImportQueue,
    RecordingWorkQueue,
)
from prme.embedding.hashing import HashingEmbedder
from prme.engine.config import EngineConfig
from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from prme.model.records import OwnerKey
from prme.ports import CredentialStore, Embedder, Ledger, SearchIndex, UsageLog
from prme.retrieval.tokens import Cl100kTokenCounter
from tests.harness.store_scan import scan_memory, scan_sqlite

ALICE = OwnerKey(tenant_id="t1", owner_id="alice")
BOB = OwnerKey(tenant_id="t1", owner_id="bob")
OTHER_TENANT_ALICE = OwnerKey(tenant_id="t2", owner_id="alice")

TOKEN_COUNTER = Cl100kTokenCounter()


@dataclass
class Harness:
    engine: MemoryEngine
    ledger: Ledger
    index: SearchIndex
    queue: RecordingWorkQueue
    clock: ManualClock
    embedder: Embedder
    # The API keys beside this ledger, and every stored record as text read from the stores.
    credentials: CredentialStore = field(default_factory=InMemoryCredentialStore)
    scan_stores: Callable[[], list[str]] = field(default=list)
    # The chunks of bulk imports, as sent: tests deliver them to the engine (again).
    import_queue: RecordingImportQueue = field(default_factory=RecordingImportQueue)
    # The usage log the engine meters into (issue 19's metering).
    usage: UsageLog | None = None


def memory_harness(config: EngineConfig | None = None, embedder: Embedder | None = None) -> Harness:
    credentials = InMemoryCredentialStore()
    ledger, index, queue, clock = (
        InMemoryLedger(credentials),
        InMemoryIndex(),
        RecordingWorkQueue(),
        ManualClock(),
    )
    embedder = embedder or HashingEmbedder()
    import_queue = RecordingImportQueue()
    usage = InMemoryUsageLog()
    deps = EngineDeps(
        ledger=ledger,
        index=index,
        queue=queue,
        embedder=embedder,
        clock=clock,
        token_counter=TOKEN_COUNTER,
        config=config or EngineConfig(),
        imports=InMemoryImportJobStore(),
        import_queue=import_queue,
        usage=usage,
        ranking_profiles=InMemoryRankingProfileStore(),
    )
    return Harness(
        MemoryEngine(deps),
        ledger,
        index,
        queue,
        clock,
        embedder,
        credentials,
        lambda: scan_memory(ledger, index),
        import_queue,
        usage=usage,
    )


def embedded_harness(
    data_dir: Path, config: EngineConfig | None = None, embedder: Embedder | None = None
) -> Harness:
    clock = ManualClock()
    embedder = embedder or HashingEmbedder()
    backend = open_embedded(
        data_dir, embedder=embedder, clock=clock, token_counter=TOKEN_COUNTER, config=config
    )
    queue = RecordingWorkQueue()
    import_queue = RecordingImportQueue()
    deps = EngineDeps(
        ledger=backend.ledger,
        index=backend.index,
        queue=queue,
        embedder=embedder,
        clock=clock,
        token_counter=TOKEN_COUNTER,
        config=config or EngineConfig(),
        imports=backend.engine.deps.imports,
        import_queue=import_queue,
        usage=backend.usage,
        ranking_profiles=backend.ranking_profiles,
    )
    return Harness(
        MemoryEngine(deps),
        backend.ledger,
        backend.index,
        queue,
        clock,
        embedder,
        backend.ledger,
        lambda: scan_sqlite(data_dir),
        import_queue,
        usage=backend.usage,
    )
