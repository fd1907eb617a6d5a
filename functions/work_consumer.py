"""What the materializer and the extractor share: SQS records that each name one work item,
processed with partial batch failures under the invocation's deadline.

A message only names a work item; redelivery is harmless. When a dependency is down the
record fails and SQS redelivers it; on its last allowed receive (the max receive count of the
queue the function consumes) the work item is marked failed, visible through the status
routes, and the message goes on to the DLQ.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from functions.runtime import backend, invocation_deadline, logger, metrics, settings
from prme.backends.aws.resources import queue_specs

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch import BatchProcessor
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext


class WorkConsumer:
    """Consumes the queue of one purpose ("materialize" or "extract"); what it uses (the batch
    processor, the engine's modules) is imported on the first batch, not with the handler."""

    def __init__(self, purpose: str) -> None:
        self.purpose = purpose

    @cached_property
    def _processor(self) -> BatchProcessor:
        from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType

        # Report every failed record, even when all of them failed, instead of failing the
        # invocation.
        return BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def record_handler(self, record: SQSRecord) -> None:
        from prme.engine.work_refs import WorkRef
        from prme.errors import PrmeError
        from prme.model.enums import WorkFailure

        try:
            ref = WorkRef.from_message(json.loads(record.body))
        except (ValueError, RecursionError, PrmeError):
            logger.warning("unreadable work message", extra={"message_id": record.message_id})
            raise
        engine = backend().engine
        try:
            report = engine.process_queued([ref])
        except PrmeError as exc:
            receives = int(record.attributes.approximate_receive_count)
            spec = queue_specs(settings().queue_prefix)[self.purpose]
            if receives >= spec.max_receive_count:
                engine.fail_work(ref, WorkFailure.RETRIES_EXHAUSTED)
                metrics.add_metric(name="WorkFailed", unit=MetricUnit.Count, value=1)
            logger.warning(
                "work deferred", extra={"work_id": ref.work_id, "reason": type(exc).__name__}
            )
            raise
        metrics.add_metric(name="WorkProcessed", unit=MetricUnit.Count, value=report.processed)

    def consume(self, event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        metrics.add_metric(name="WorkMessages", unit=MetricUnit.Count, value=len(event["Records"]))
        # Records still waiting when the deadline is spent fail fast and SQS redelivers them,
        # instead of Lambda stopping the whole batch mid-write.
        from aws_lambda_powertools.utilities.batch import process_partial_response

        with invocation_deadline(context):
            return process_partial_response(
                event=event,
                record_handler=self.record_handler,
                processor=self._processor,
                context=context,
            )
