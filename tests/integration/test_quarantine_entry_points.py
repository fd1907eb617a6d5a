"""One unreadable record: opening the data directory, `prme worker`, `prme keys` and the
materializer Lambda go on with everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from prme.backends.embedded.service import LEDGER_FILE, open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.model.enums import ProcessingStatus
from prme.model.inputs import FastIngestInput
from prme.model.records import OwnerKey
from tests.harness.aws import boto_client
from tests.harness.cli import prme
from tests.harness.lambda_events import ALICE as LAMBDA_ALICE
from tests.harness.lambda_events import Deployed, FakeLambdaContext, pending_store, sqs_event
from tests.harness.poison import dynamodb_poison, sqlite_poison

ALICE = OwnerKey(tenant_id="local", owner_id="alice")
BOB = OwnerKey(tenant_id="local", owner_id="bob")


def pending_sources(data_dir: Path) -> dict[OwnerKey, list[str]]:
    """Fast-ingested sources of two owners, left pending as a killed process leaves them."""
    backend = open_embedded(data_dir, embedder=HashingEmbedder(), recover_pending=False)
    try:
        return {
            owner: backend.engine.ingest_fast(
                owner,
                FastIngestInput.model_validate({"items": [{"content": f"{owner.owner_id} {i}"}]}),
            ).event_ids
            for i, owner in enumerate((ALICE, BOB))
        }
    finally:
        backend.close()


def test_opening_a_data_directory_quarantines_what_it_cannot_load(tmp_path: Path) -> None:
    sources = pending_sources(tmp_path)
    (broken,) = sources[ALICE]
    sqlite_poison(tmp_path / LEDGER_FILE)("event", ALICE, broken, "deep_metadata")

    backend = open_embedded(tmp_path, embedder=HashingEmbedder())
    try:
        status, work = backend.engine.get_processing_status(ALICE, broken)
        assert (status, work[0].last_error) == (ProcessingStatus.FAILED, "CorruptRecord")
        (bobs,) = sources[BOB]
        assert backend.engine.get_processing_status(BOB, bobs)[0] is ProcessingStatus.COMPLETED
        assert backend.ledger.count_pending_work(None) == 0
    finally:
        backend.close()


@pytest.mark.slow
def test_worker_and_keys_run_over_an_unreadable_record(tmp_path: Path) -> None:
    sources = pending_sources(tmp_path)
    sqlite_poison(tmp_path / LEDGER_FILE)("event", ALICE, sources[ALICE][0], "invalid_json")

    worker = prme(tmp_path, "worker")
    assert worker.returncode == 0, worker.stderr
    assert "pending=0" in worker.stdout
    created = prme(tmp_path, "keys", "create", "--user-id", "bob")
    assert created.returncode == 0, created.stderr
    listed = prme(tmp_path, "keys", "list")
    assert listed.returncode == 0, listed.stderr
    assert "bob" in listed.stdout


def test_the_materializer_fails_work_on_an_unreadable_node_and_takes_the_rest(
    deployed: Deployed, aws_endpoint: str
) -> None:
    from functions import materializer, runtime
    from prme.engine.work_refs import WorkRef

    broken, broken_work = pending_store("a node that will not load")
    kept, kept_work = pending_store("a node that loads")
    poison = dynamodb_poison(boto_client("dynamodb", aws_endpoint), deployed.names.table)
    poison("node", LAMBDA_ALICE, broken.node_id, "deep_metadata")

    event = sqs_event([WorkRef.of(broken_work), WorkRef.of(kept_work)])
    response = materializer.handler(event, FakeLambdaContext())

    # Nothing to redeliver: the broken item failed for good, the other one is done.
    assert response == {"batchItemFailures": []}
    engine = runtime.backend().engine
    status, work = engine.get_processing_status(LAMBDA_ALICE, broken.event_id)
    assert (status, work[0].last_error) == (ProcessingStatus.FAILED, "CorruptRecord")
    assert engine.get_processing_status(LAMBDA_ALICE, kept.event_id)[0] is (
        ProcessingStatus.COMPLETED
    )
