"""Composition of the embedded backend: one data directory, one engine."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from prme.backends.clock import SystemClock
from prme.backends.embedded.sqlite import Synchronous, private_directory
from prme.backends.embedded.sqlite_imports import (
    IMPORTS_FILE,
    EmbeddedImportQueue,
    SqliteImportJobStore,
    SqliteImports,
)
from prme.backends.embedded.sqlite_index import SqliteVectorIndex
from prme.backends.embedded.sqlite_ledger import SqliteLedger
from prme.backends.embedded.sqlite_limits import SqliteLimits
from prme.backends.embedded.sqlite_ranking_profiles import (
    RANKING_PROFILES_FILE,
    SqliteRankingProfileStore,
)
from prme.backends.embedded.sqlite_usage import SqliteUsageLog
from prme.backends.embedded.upload_store import UPLOADS_DIRECTORY, LocalUploadStore
from prme.engine.config import EngineConfig
from prme.engine.credentials import CredentialService
from prme.engine.deps import EngineDeps
from prme.engine.limits import LimitGate
from prme.engine.service import MemoryEngine
from prme.model.limits import TenantLimits
from prme.model.records import WorkItem
from prme.model.search import VectorSearchSettings
from prme.ports import Clock, Embedder, Extractor
from prme.retrieval.tokens import Cl100kTokenCounter, TokenCounter

LEDGER_FILE = "ledger.sqlite3"
INDEX_FILE = "index.sqlite3"
# Usage counters and per-tenant limits (`prme limits`); no memory content.
LIMITS_FILE = "limits.sqlite3"
USAGE_FILE = "usage.sqlite3"


class InProcessWorkQueue:
    """Embedded work runs in the process: a send only records that a pass is due."""

    def __init__(self) -> None:
        self.pending_hint = 0

    def enqueue(self, items: Sequence[WorkItem]) -> None:
        self.pending_hint += len(items)


@dataclass
class EmbeddedBackend:
    engine: MemoryEngine
    credentials: CredentialService
    ledger: SqliteLedger
    index: SqliteVectorIndex
    limits: SqliteLimits | None = None
    imports: SqliteImports | None = None
    usage: SqliteUsageLog | None = None
    ranking_profiles: SqliteRankingProfileStore | None = None

    def close(self) -> None:
        self.index.close()
        self.ledger.close()
        if self.limits is not None:
            self.limits.close()
        if self.imports is not None:
            self.imports.close()
        if self.usage is not None:
            self.usage.close()
        if self.ranking_profiles is not None:
            self.ranking_profiles.close()


def open_embedded(
    data_dir: Path,
    *,
    embedder: Embedder | None = None,
    extractor: Extractor | None = None,
    clock: Clock | None = None,
    token_counter: TokenCounter | None = None,
    config: EngineConfig | None = None,
    synchronous: Synchronous = "normal",
    recover_pending: bool = True,
    limits: TenantLimits | None = None,
    vector_search: VectorSearchSettings | None = None,
) -> EmbeddedBackend:
    """Open (or create) a data directory and finish any work a previous process left pending."""
    private_directory(data_dir)
    ledger = SqliteLedger(data_dir / LEDGER_FILE, synchronous=synchronous)
    index = SqliteVectorIndex(
        data_dir / INDEX_FILE, synchronous=synchronous, vector_search=vector_search
    )
    usage = SqliteUsageLog(data_dir / USAGE_FILE, synchronous=synchronous)
    if embedder is None:
        from prme.embedding.minilm import MiniLmEmbedder
        from prme.settings import default_cache_dir

        embedder = MiniLmEmbedder(cache_dir=default_cache_dir())
    clock = clock or SystemClock()
    limit_store = SqliteLimits(data_dir / LIMITS_FILE, synchronous=synchronous)
    imports = SqliteImports(data_dir / IMPORTS_FILE, synchronous=synchronous)
    import_queue = EmbeddedImportQueue(imports)
    ranking_profiles = SqliteRankingProfileStore(
        data_dir / RANKING_PROFILES_FILE, synchronous=synchronous
    )
    deps = EngineDeps(
        ledger=ledger,
        index=index,
        queue=InProcessWorkQueue(),
        embedder=embedder,
        clock=clock,
        token_counter=token_counter or Cl100kTokenCounter(),
        config=config or EngineConfig(),
        limits=LimitGate(limit_store, limit_store, limits or TenantLimits(), clock),
        imports=SqliteImportJobStore(imports),
        import_queue=import_queue,
        uploads=LocalUploadStore(data_dir / UPLOADS_DIRECTORY, clock),
        usage=usage,
        ranking_profiles=ranking_profiles,
    )
    if extractor is not None:
        deps = replace(deps, extractor=extractor)
    engine = MemoryEngine(deps)
    import_queue.attach(engine.commit_import_chunk)
    if recover_pending:
        # Chunks of an import a killed process saved but did not commit.
        import_queue.drain()
        # Finish what a killed process committed but did not index.
        while deps.ledger.count_pending_work(None):
            report = engine.process_materializations()
            if report.processed == 0:
                break
    return EmbeddedBackend(
        engine=engine,
        credentials=CredentialService(ledger, clock),
        ledger=ledger,
        index=index,
        limits=limit_store,
        imports=imports,
        usage=usage,
        ranking_profiles=ranking_profiles,
    )
