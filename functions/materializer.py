"""SQS consumer of materialization work, with partial batch failures.

A message only names a work item; redelivery is harmless. When a dependency is down the
record fails and SQS redelivers it; on its last allowed receive the work item is marked
failed (visible through processing-status) and the message goes on to the DLQ.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.runtime import backend, invocation_deadline, logger, metrics, settings, tracer
from prme.backends.aws.resources import queue_specs
from prme.engine.work_refs import WorkRef
from prme.errors import PrmeError

# Report every failed record, even when all of them failed, instead of failing the invocation.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> None:
    try:
        ref = WorkRef.from_message(json.loads(record.body))
    except (ValueError, PrmeError):
        logger.warning("unreadable work message", extra={"message_id": record.message_id})
        raise
    engine = backend().engine
    try:
        report = engine.process_queued([ref])
    except PrmeError as exc:
        receives = int(record.attributes.approximate_receive_count)
        if receives >= queue_specs(settings().queue_prefix)["materialize"].max_receive_count:
            engine.fail_work(ref, "retries_exhausted")
            metrics.add_metric(name="WorkFailed", unit=MetricUnit.Count, value=1)
        logger.warning(
            "work deferred", extra={"work_id": ref.work_id, "reason": type(exc).__name__}
        )
        raise
    metrics.add_metric(name="WorkProcessed", unit=MetricUnit.Count, value=report.processed)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    metrics.add_metric(name="WorkMessages", unit=MetricUnit.Count, value=len(event["Records"]))
    # Records still waiting when the deadline is spent fail fast and SQS redelivers them,
    # instead of Lambda stopping the whole batch mid-write.
    with invocation_deadline(context):
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
