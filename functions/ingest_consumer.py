"""SQS-fed bulk imports: each message is one chunk of an import job the API planned.

Message: {"import_id", "tenant_id", "owner_id", "chunk_index", "items": [...]} (see
`prme.model.imports.ImportChunkMessage`). Nothing in it is believed on its own: the chunk
commits only when the job stored under its tenant, owner and import id lists that chunk with
the same digest. A message that can never commit (not a chunk, or one no job vouches for) goes
straight to the dead-letter queue with a sanitized reason; one that failed for a passing cause
is retried by SQS, and its redelivery commits nothing twice.
"""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from functions.runtime import backend, invocation_deadline, logger, metrics, settings, tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch import BatchProcessor
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from pydantic import ValidationError


@cache
def _processor() -> BatchProcessor:
    """Built on the first batch: the batch utility and the message models are imported then."""
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType

    return BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@cache
def _dead_letter_url() -> str:
    from prme.backends.aws.resources import queue_specs

    name = queue_specs(settings().queue_prefix)["ingest"].dead_letter_name
    url: str = backend().clients.sqs.get_queue_url(QueueName=name)["QueueUrl"]
    return url


def _reject(record: SQSRecord, reason: str) -> None:
    """Park a message that can never succeed in the DLQ now, with why, instead of retrying it."""
    backend().clients.sqs.send_message(
        QueueUrl=_dead_letter_url(),
        MessageBody=record.body,
        MessageAttributes={"prme_reason": {"DataType": "String", "StringValue": reason}},
    )
    logger.warning("import rejected", extra={"message_id": record.message_id, "reason": reason})
    metrics.add_metric(name="ImportsRejected", unit=MetricUnit.Count, value=1)


@cache
def _field_names() -> frozenset[str]:
    """Every field name of the message's models, nested ones included."""
    from prme.model.imports import ImportChunkMessage

    schema = ImportChunkMessage.model_json_schema()
    models = [schema, *schema.get("$defs", {}).values()]
    return frozenset(name for model in models for name in model.get("properties", {}))


def _sanitized(error: ValidationError) -> str:
    # Field locations and error types only: never the submitted values. A location also holds
    # the sender's own keys (an unknown field, a metadata key), which are content: only the
    # models' field names and list positions are kept.
    first = error.errors()[0]
    location = ".".join(
        str(part) if isinstance(part, int) or part in _field_names() else "*"
        for part in first["loc"]
    )
    return f"invalid_message:{location}:{first['type']}"


def record_handler(record: SQSRecord) -> None:
    from pydantic import ValidationError

    from prme.errors import CorruptRecordError, ImportChunkRefusedError
    from prme.model.imports import ImportChunkMessage

    try:
        message = ImportChunkMessage.model_validate(json.loads(record.body))
    except json.JSONDecodeError:
        _reject(record, "invalid_message:not_json")
        return
    except ValidationError as exc:
        _reject(record, _sanitized(exc))
        return
    except (RecursionError, ValueError):
        # Nested past the parser's stack, or an integer of thousands of digits: as invalid
        # as broken JSON, so parked now rather than failing on every redelivery.
        _reject(record, "invalid_message:json_limits")
        return
    try:
        outcome = backend().engine.commit_import_chunk(message)
    except ImportChunkRefusedError as exc:
        # No job of the service lists this chunk: whoever sent it, it is not committed.
        _reject(record, f"refused:{exc.reason}")
        return
    except CorruptRecordError:
        _reject(record, "refused:unreadable_import")
        return
    if outcome.dropped_for_erasure:
        # Acknowledged, not failed: redelivering it would only drop it again.
        logger.info("import chunk dropped: its owner was erased after the import began")
        metrics.add_metric(name="ImportsDroppedForErasure", unit=MetricUnit.Count, value=1)
        return
    if outcome.replayed:
        metrics.add_metric(name="ImportChunksReplayed", unit=MetricUnit.Count, value=1)
        return
    metrics.add_metric(name="EventsImported", unit=MetricUnit.Count, value=outcome.accepted)
    if outcome.failed:
        metrics.add_metric(name="ImportItemsFailed", unit=MetricUnit.Count, value=outcome.failed)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    metrics.add_metric(name="ImportMessages", unit=MetricUnit.Count, value=len(event["Records"]))
    # Records still waiting when the deadline is spent fail fast and SQS redelivers them,
    # instead of Lambda stopping the whole batch mid-write.
    from aws_lambda_powertools.utilities.batch import process_partial_response

    with invocation_deadline(context):
        return process_partial_response(
            event=event, record_handler=record_handler, processor=_processor(), context=context
        )
