"""A bulk import on the local AWS whose consumer process is killed with SIGKILL in the middle of
a chunk: SQS delivers the batch again and the import still ends with every item saved once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import pytest

from prme.backends.aws.resources import queue_specs
from prme.model.imports import FINISHED, ImportJob, ImportStatus
from prme.model.inputs import MAX_FAST_INGEST_ITEMS
from tests.harness.dying_consumer import PAUSE_AT_ENV, PAUSED, SqsHandler, poll_once
from tests.harness.imports import import_input
from tests.harness.lambda_events import ALICE, Deployed

ROOT = Path(__file__).resolve().parents[2]
CONSUMER = [sys.executable, "-m", "tests.harness.dying_consumer"]
# Four chunks, the last one short.
ITEMS = 3 * MAX_FAST_INGEST_ITEMS + 33
# The test queue hides a received message this long (the deployed queue: six minutes), so the
# killed consumer's batch comes back within the test.
REDELIVERY_S = 2
# Bound on the second consumer's run; it normally ends within a few polls.
FINISH_WITHIN_S = 30.0


def _queued(deployed: Deployed, purpose: str) -> int:
    attributes = deployed.sqs.get_queue_attributes(
        QueueUrl=deployed.urls[purpose],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(count) for count in attributes.values())


def _kill_inside_second_chunk(stderr_path: Path) -> None:
    """Run the consumer in a child process until it is inside its second chunk's commit (the
    events saved, the progress not), then SIGKILL it."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'core'}", PAUSE_AT_ENV: "2"}
    with (
        stderr_path.open("w") as stderr,
        subprocess.Popen(
            CONSUMER, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=ROOT
        ) as proc,
    ):
        assert proc.stdout is not None
        # Powertools logs and metrics share stdout: read until the pause or the child's end.
        for line in proc.stdout:
            if line.strip() == PAUSED:
                proc.send_signal(signal.SIGKILL)
                break
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, stderr_path.read_text()[-2000:]


def _contents(deployed: Deployed) -> list[str]:
    from functions import runtime

    engine = runtime.backend().engine
    contents: list[str] = []
    after: str | None = None
    while True:
        page = engine.list_events(ALICE, limit=1000, after_id=after)
        contents.extend(event.content for event in page.items)
        if page.next_after_id is None:
            return contents
        after = page.next_after_id


@pytest.mark.slow
def test_an_import_whose_consumer_is_killed_mid_chunk_ends_with_each_item_saved_once(
    deployed: Deployed, tmp_path: Path
) -> None:
    from functions import ingest_consumer, runtime

    engine = runtime.backend().engine
    ingest_url = deployed.urls["ingest"]
    deployed.sqs.set_queue_attributes(
        QueueUrl=ingest_url, Attributes={"VisibilityTimeout": str(REDELIVERY_S)}
    )
    job = engine.submit_import(ALICE, import_input(ITEMS))
    assert len(job.chunks) == 4

    _kill_inside_second_chunk(tmp_path / "consumer.stderr")

    # Killed mid-import: the first chunk is counted, the second one's events are saved but not
    # counted, and nothing of the batch was deleted from the queue.
    midway = engine.get_import(ALICE, job.import_id)
    assert (midway.status, midway.chunks_done) == (ImportStatus.RUNNING, 1)
    assert engine.get_stats(ALICE).events == 2 * MAX_FAST_INGEST_ITEMS
    assert _queued(deployed, "ingest") == 4

    # A fresh consumer (this process) receives the whole batch again once it is visible.
    handler = cast(SqsHandler, ingest_consumer.handler)
    batch_size = queue_specs(deployed.names.queue_prefix)["ingest"].batch_size
    deadline = time.monotonic() + FINISH_WITHIN_S
    done: ImportJob = midway
    while done.status not in FINISHED and time.monotonic() < deadline:
        poll_once(deployed.sqs, ingest_url, handler, batch_size=batch_size)
        done = engine.get_import(ALICE, job.import_id)

    assert (done.status, done.chunks_done, done.items_accepted, done.items_failed) == (
        ImportStatus.COMPLETED,
        4,
        ITEMS,
        0,
    )
    contents = _contents(deployed)
    assert len(contents) == len(set(contents)) == ITEMS
    assert set(contents) == {item.content for item in import_input(ITEMS).items}
    assert engine.get_stats(ALICE).events == ITEMS
    # One materialization per event: the replayed chunk queued no work twice.
    assert engine.process_materializations(ALICE, budget_ms=0).pending == ITEMS
    assert _queued(deployed, "ingest") == 0
    assert _queued(deployed, "ingest-dlq") == 0
