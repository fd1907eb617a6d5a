"""The ingest queue's event source mapping run by hand (`poll_once`), and a child process that runs
it with the real consumer handler until it is killed in the middle of a chunk.

PRME_TEST_PAUSE_AT_COMMIT=<n>: the n-th chunk commit of the process saves its events, then the
process prints `PAUSED` and waits there, before the chunk's progress is recorded, to be killed.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from prme.model.records import IngestCommit
from prme.ports import Ledger

PAUSED = "prme-test: paused inside a chunk commit"
PAUSE_AT_ENV = "PRME_TEST_PAUSE_AT_COMMIT"
# The child gives up on its own if nobody kills it (its parent died): no orphan lingers.
CHILD_LIFETIME_S = 60.0

SqsHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def _record(template: dict[str, Any], message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    record = copy.deepcopy(template)
    record["messageId"] = message["MessageId"]
    record["receiptHandle"] = message["ReceiptHandle"]
    record["body"] = message["Body"]
    record["md5OfBody"] = message["MD5OfBody"]
    record["attributes"] = {**record["attributes"], **message.get("Attributes", {})}
    record["eventSourceARN"] = queue_arn
    return record


def poll_once(sqs: Any, queue_url: str, handler: SqsHandler, *, batch_size: int) -> int:
    """One poll of the mapping: receive a batch, invoke `handler` with it as Lambda would, and
    delete the messages it did not report failed. How many messages were received."""
    from tests.harness.lambda_events import FakeLambdaContext, load_event

    received = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=batch_size,
        WaitTimeSeconds=1,
        AttributeNames=["All"],
    ).get("Messages", [])
    if not received:
        return 0
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    template = load_event("sqs_ingest_batch.json")["Records"][0]
    event = {"Records": [_record(template, m, queue_arn) for m in received]}
    response = handler(event, FakeLambdaContext())
    failed = {failure["itemIdentifier"] for failure in response["batchItemFailures"]}
    for message in received:
        if message["MessageId"] not in failed:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return len(received)


class PausingLedger:
    """The real ledger, except that its `pause_at`-th ingest commit is saved and then never
    returns: the process stops there, as a Lambda stopped mid-chunk would."""

    def __init__(self, inner: Ledger, pause_at: int) -> None:
        self._inner = inner
        self._pause_at = pause_at
        self._commits = 0

    def commit_ingest(self, commit: IngestCommit) -> None:
        self._inner.commit_ingest(commit)
        self._commits += 1
        if self._commits == self._pause_at:
            print(PAUSED, flush=True)
            time.sleep(CHILD_LIFETIME_S)
            os._exit(1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main() -> None:
    from dataclasses import replace
    from typing import cast

    from functions import ingest_consumer, runtime
    from prme.backends.aws.resources import queue_specs
    from prme.engine.service import MemoryEngine

    built = runtime.backend()
    pause_at = int(os.environ[PAUSE_AT_ENV])
    deps = built.engine.deps
    built.engine = MemoryEngine(
        replace(deps, ledger=cast(Ledger, PausingLedger(deps.ledger, pause_at)))
    )
    spec = queue_specs(runtime.settings().queue_prefix)["ingest"]
    sqs = built.clients.sqs
    queue_url: str = sqs.get_queue_url(QueueName=spec.name)["QueueUrl"]
    handler = cast(SqsHandler, ingest_consumer.handler)
    give_up = time.monotonic() + CHILD_LIFETIME_S
    while time.monotonic() < give_up:
        poll_once(sqs, queue_url, handler, batch_size=spec.batch_size)
    sys.exit("the consumer never reached the commit it was to pause in")


if __name__ == "__main__":
    main()
