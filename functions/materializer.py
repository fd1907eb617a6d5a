"""SQS consumer of materialization work (the materialize queue), with partial batch failures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from functions.runtime import logger, metrics, tracer
from functions.work_consumer import WorkConsumer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext

consumer = WorkConsumer("materialize")


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return consumer.consume(event, context)
