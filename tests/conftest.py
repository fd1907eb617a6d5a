"""Shared fixtures: engines wired to fakes or to the embedded backend, with a manual clock."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import open_embedded
from prme.backends.memory import InMemoryIndex, InMemoryLedger, RecordingWorkQueue
from prme.embedding.hashing import HashingEmbedder
from prme.engine.config import EngineConfig
from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from prme.model.records import OwnerKey
from prme.ports import Embedder, Ledger, SearchIndex
from prme.retrieval.tokens import Cl100kTokenCounter
from tests.aws_support import (  # noqa: F401 - fixtures shared by every test folder
    aws_endpoint,
    aws_names,
    aws_resources,
    dynamodb_table,
    opensearch_url,
)
from tests.iam_support import (  # noqa: F401 - IAM-enforcing moto and OpenSearch proxy
    iam_aws,
    opensearch_iam_proxy,
)
from tests.stack_template import stack_template  # noqa: F401 - the synthesized stack, once per run

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


def memory_harness(config: EngineConfig | None = None, embedder: Embedder | None = None) -> Harness:
    ledger, index, queue, clock = (
        InMemoryLedger(),
        InMemoryIndex(),
        RecordingWorkQueue(),
        ManualClock(),
    )
    embedder = embedder or HashingEmbedder()
    deps = EngineDeps(
        ledger=ledger,
        index=index,
        queue=queue,
        embedder=embedder,
        clock=clock,
        token_counter=TOKEN_COUNTER,
        config=config or EngineConfig(),
    )
    return Harness(MemoryEngine(deps), ledger, index, queue, clock, embedder)


def embedded_harness(
    data_dir: Path, config: EngineConfig | None = None, embedder: Embedder | None = None
) -> Harness:
    clock = ManualClock()
    embedder = embedder or HashingEmbedder()
    backend = open_embedded(
        data_dir, embedder=embedder, clock=clock, token_counter=TOKEN_COUNTER, config=config
    )
    queue = RecordingWorkQueue()
    deps = EngineDeps(
        ledger=backend.ledger,
        index=backend.index,
        queue=queue,
        embedder=embedder,
        clock=clock,
        token_counter=TOKEN_COUNTER,
        config=config or EngineConfig(),
    )
    return Harness(MemoryEngine(deps), backend.ledger, backend.index, queue, clock, embedder)


@pytest.fixture
def harness() -> Harness:
    return memory_harness()


def aws_harness(
    dynamodb: Any,
    table: str,
    opensearch: Any,
    alias: str,
    config: EngineConfig | None = None,
    *,
    refresh_on_write: bool = True,
) -> Harness:
    """The AWS adapters against the local AWS; work announcements are recorded, not sent.

    Writes are searchable at once unless `refresh_on_write` is off, as the stack deploys it
    (tests/contract/test_deployed_refresh.py)."""
    from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
    from prme.backends.aws.opensearch_index import OpenSearchIndex

    ledger = DynamoDbLedger(dynamodb, table)
    index = OpenSearchIndex(opensearch, alias, refresh_on_write=refresh_on_write)
    queue, clock, embedder = RecordingWorkQueue(), ManualClock(), HashingEmbedder()
    deps = EngineDeps(
        ledger=ledger,
        index=index,
        queue=queue,
        embedder=embedder,
        clock=clock,
        token_counter=TOKEN_COUNTER,
        config=config or EngineConfig(),
    )
    return Harness(MemoryEngine(deps), ledger, index, queue, clock, embedder)


@pytest.fixture(params=["memory", "embedded", "aws"])
def any_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "memory":
        yield memory_harness()
    elif request.param == "embedded":
        h = embedded_harness(tmp_path / "data")
        yield h
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]
    else:
        resources = request.getfixturevalue("aws_resources")
        yield aws_harness(*resources)
