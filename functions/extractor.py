"""SQS consumer of extraction work (the extract queue): one Converse call per record, on its
own function so its timeout fits a model's answer and materialization never waits behind it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from functions.runtime import logger, metrics, tracer
from functions.work_consumer import WorkConsumer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext

consumer = WorkConsumer("extract")


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return consumer.consume(event, context)
