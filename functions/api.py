"""The HTTP API: FastAPI behind API Gateway HTTP API (payload v2) through Mangum.

The import brings only the handler and its Powertools decorators; FastAPI, the app's routes,
Mangum and the backend are imported and built on the first request (`_adapter`), and of the
app's routes and pydantic models only those the request uses.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from functions.runtime import (
    backend,
    deferred_model_builds,
    garbage_collection_paused,
    invocation_deadline,
    logger,
    metrics,
    settings,
    tracer,
)

if TYPE_CHECKING:
    import asyncio

    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mangum import Mangum


@cache
def _event_loop() -> asyncio.AbstractEventLoop:
    """The container's one event loop, owned here so it lives as long as the container.

    Mangum runs each request on the thread's current loop. Left to itself it would create
    one implicitly (deprecated since Python 3.12) that nothing references once another
    runner resets the current loop, and it would be collected unclosed."""
    import asyncio
    import atexit

    loop = asyncio.new_event_loop()
    atexit.register(loop.close)
    return loop


@cache
def _adapter() -> Mangum:
    with garbage_collection_paused():
        return _build_adapter()


def _build_adapter() -> Mangum:
    with deferred_model_builds():
        from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
        from mangum import Mangum

        from functions.api_stage import StagePrefix
        from prme.http.app import create_app
        from prme.http.auth import AuthPolicy
        from prme.http.dependencies import ApiRuntime

    built = backend()
    app = create_app(
        ApiRuntime(
            engine=built.engine,
            credentials=built.credentials,
            auth=AuthPolicy(),
            max_body_bytes=settings().max_body_bytes,
            max_response_bytes=settings().max_response_bytes,
            request_budget_ms=settings().request_budget_ms,
            mcp_tools=settings().mcp_tools,
        )
    )
    # PRME's loggers (the per-request line included) write through powertools' JSON formatter
    # instead of propagating to the runtime's text handler on the root logger.
    copy_config_to_registered_loggers(source_logger=logger, include={"prme"})
    # A named stage's prefix becomes the app's root path (the $default stage has none).
    return Mangum(StagePrefix(app), lifespan="off")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    import asyncio

    metrics.add_metric(name="ApiRequests", unit=MetricUnit.Count, value=1)
    asyncio.set_event_loop(_event_loop())
    # Opened first, so a cold start's build counts against the invocation's time too; set
    # around Mangum, so the request's task and the thread its route runs in copy it.
    with invocation_deadline(context):
        # Mangum types its own context protocol; powertools' LambdaContext is the same object.
        response: dict[str, Any] = _adapter()(event, cast(Any, context))
    return response
