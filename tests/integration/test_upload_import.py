"""An import by upload end to end on the local AWS: a multi-megabyte NDJSON file sent by a real
HTTP PUT to the presigned S3 URL, split into chunks on the SQS ingest queue, consumed by the
ingest consumer's handler (each message delivered twice), counted exactly, its bad line
reported by number, and the file deleted."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from prme.engine.import_uploads import open_upload_import, start_upload_import
from prme.model.imports import ImportStatus
from prme.model.uploads import UploadRequest
from tests.harness.iam import new_container
from tests.harness.lambda_events import ALICE, Deployed, FakeLambdaContext, sqs_records
from tests.harness.uploads import upload_bucket

pytestmark = pytest.mark.slow  # a 3 MB file's events committed through moto

LINES = 200
BAD_LINE = 123


def upload_file() -> bytes:
    """About 3 MB: 200 items of 15 KB (ten to a chunk message), CRLF line ends, one line
    cut short."""
    lines = [
        json.dumps({"content": f"field note {i}: " + "kestrel " * 1_900, "session_id": "up"})
        for i in range(LINES)
    ]
    lines[BAD_LINE - 1] = lines[BAD_LINE - 1][:100]
    return ("\r\n".join(lines) + "\r\n").encode()


def drain_ingest_queue(deployed: Deployed) -> int:
    """Deliver every message of the ingest queue to the consumer until it takes each, then
    each once more (at-least-once delivery); how many messages there were."""
    from functions import ingest_consumer

    delivered = 0
    while True:
        answer = deployed.sqs.receive_message(
            QueueUrl=deployed.urls["ingest"], MaxNumberOfMessages=10, WaitTimeSeconds=0
        )
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        if not messages:
            return delivered
        bodies = [m["Body"] for m in messages]
        # A slow local AWS can end an invocation's budget before its last records: those are
        # reported as failures and delivered again, as SQS would after their visibility.
        waiting = bodies
        for _ in range(10):
            event = sqs_records("sqs_ingest_batch.json", waiting)
            failed = ingest_consumer.handler(event, FakeLambdaContext())["batchItemFailures"]
            waiting = [waiting[int(f["itemIdentifier"].split("-")[1])] for f in failed]
            if not waiting:
                break
        assert waiting == []
        repeat = ingest_consumer.handler(
            sqs_records("sqs_ingest_batch.json", bodies), FakeLambdaContext()
        )
        assert repeat == {"batchItemFailures": []}
        for message in messages:
            deployed.sqs.delete_message(
                QueueUrl=deployed.urls["ingest"], ReceiptHandle=message["ReceiptHandle"]
            )
        delivered += len(messages)


def test_a_multi_megabyte_upload_is_split_consumed_and_counted_exactly(
    deployed: Deployed, aws_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions import runtime

    data = upload_file()
    assert len(data) > 3_000_000  # several MB, many blocks of the split
    with upload_bucket(aws_endpoint) as (s3, bucket):
        monkeypatch.setenv("PRME_UPLOAD_BUCKET", bucket)
        new_container()
        engine = runtime.backend().engine

        job, target = open_upload_import(engine.deps, ALICE, UploadRequest(size_bytes=len(data)))
        answer = httpx.put(target.url, content=data, headers=target.headers, timeout=60.0)
        assert answer.status_code == 200
        started = start_upload_import(engine.deps, ALICE, job.import_id)
        chunks = drain_ingest_queue(deployed)

        done = engine.get_import(ALICE, job.import_id)
        assert started.item_count == LINES
        assert chunks == len(done.chunks) >= 20
        assert (done.status, done.items_accepted, done.items_failed) == (
            ImportStatus.COMPLETED_WITH_ERRORS,
            LINES - 1,
            1,
        )
        (error,) = done.errors
        assert (error.line, error.item_index) == (BAD_LINE, BAD_LINE - 1)
        assert "kestrel" not in error.message
        assert engine.get_stats(ALICE).events == LINES - 1
        assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
