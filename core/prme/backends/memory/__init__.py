"""In-memory fakes of every port, for unit tests and the contract suite's reference backend."""

from prme.backends.memory.fakes import (
    InMemoryCredentialStore,
    InMemoryIndex,
    InMemoryLedger,
    RecordingWorkQueue,
)
from prme.backends.memory.imports import InMemoryImportJobStore, RecordingImportQueue
from prme.backends.memory.ranking_profiles import InMemoryRankingProfileStore
from prme.backends.memory.upload_store import InMemoryUploadStore
from prme.backends.memory.usage_log import InMemoryUsageLog

__all__ = [
    "InMemoryCredentialStore",
    "InMemoryImportJobStore",
    "InMemoryIndex",
    "InMemoryLedger",
    "InMemoryRankingProfileStore",
    "InMemoryUploadStore",
    "InMemoryUsageLog",
    "RecordingImportQueue",
    "RecordingWorkQueue",
]
