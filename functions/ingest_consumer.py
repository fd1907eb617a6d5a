"""SQS-fed bulk ingestion: each message is one import for one owner, idempotent under redelivery.

Message: {"tenant_id", "owner_id", "idempotency_key" (UUID), "body": {"items": [...]}} where
body has the shape of POST /v1/ingest/fast. Imports larger than one transaction are split
deterministically. A message that can never be valid goes straight to the dead-letter
queue with a sanitized reason; one that failed for a passing cause is retried by SQS.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any
from uuid import UUID

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from functions.runtime import backend, invocation_deadline, logger, metrics, settings, tracer
from prme.backends.aws.resources import queue_specs
from prme.engine.identity import validate_user_id
from prme.errors import ConflictError, InvalidRequestError
from prme.model.input_policy import check_name
from prme.model.inputs import FastIngestItem
from prme.model.records import OwnerKey

MAX_IMPORT_ITEMS = 10_000

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


class ImportBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    items: list[FastIngestItem] = Field(min_length=1, max_length=MAX_IMPORT_ITEMS)


class ImportMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The one field no key vouches for: held to the rule of names shown to people.
    tenant_id: Annotated[str, AfterValidator(check_name)] = Field(min_length=1, max_length=128)
    owner_id: str = Field(min_length=1, max_length=256)
    idempotency_key: UUID
    body: ImportBody


@cache
def _dead_letter_url() -> str:
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
    schema = ImportMessage.model_json_schema()
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
    try:
        message = ImportMessage.model_validate(json.loads(record.body))
        validate_user_id(message.owner_id)
        if message.body.user_id not in (None, message.owner_id):
            raise InvalidRequestError("user_id differs from owner_id")
    except json.JSONDecodeError:
        _reject(record, "invalid_message:not_json")
        return
    except ValidationError as exc:
        _reject(record, _sanitized(exc))
        return
    except InvalidRequestError:
        _reject(record, "invalid_message:owner")
        return
    except (RecursionError, ValueError):
        # Nested past the parser's stack, or an integer of thousands of digits: as invalid
        # as broken JSON, so parked now rather than failing on every redelivery.
        _reject(record, "invalid_message:json_limits")
        return
    owner = OwnerKey(tenant_id=message.tenant_id, owner_id=message.owner_id)
    sent_ms = int(record.attributes.sent_timestamp)
    try:
        result = backend().engine.ingest_import(
            owner,
            message.body.items,
            idempotency_key=str(message.idempotency_key),
            sent_at=datetime.fromtimestamp(sent_ms / 1000, tz=UTC),
        )
    except ConflictError:
        # The key already wrote other items, or memories it wrote were deleted since: no
        # redelivery can succeed, and writing them again would undo the owner's delete.
        _reject(record, "idempotency_conflict")
        return
    if result.dropped_for_erasure:
        # Acknowledged, not failed: redelivering it would only drop it again.
        logger.info("import dropped: its owner was erased after it was sent")
        metrics.add_metric(name="ImportsDroppedForErasure", unit=MetricUnit.Count, value=1)
        return
    metrics.add_metric(name="EventsImported", unit=MetricUnit.Count, value=result.accepted)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    metrics.add_metric(name="ImportMessages", unit=MetricUnit.Count, value=len(event["Records"]))
    # Records still waiting when the deadline is spent fail fast and SQS redelivers them,
    # instead of Lambda stopping the whole batch mid-write.
    with invocation_deadline(context):
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
