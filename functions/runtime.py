"""What every entry point shares: settings and the AWS backend, built once per container, lazily.

Importing this module builds only Powertools' logger and metrics (the handlers' decorators
need them). The tracer, the settings, the AWS clients and the engine are built, and their
modules imported, on the first invocation: an entry point's import stays small, and what a
handler never reaches is never imported (`benchmarks/cold_start.py` measures both).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics import MetricUnit

from functions.limits import LAMBDA_MARGIN_MS
from prme.engine.deadlines import Deadline, deadline_scope
from prme.logs import ExcInfo, exception_text

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from prme.backends.aws.service import AwsBackend
    from prme.ports import UsageLog
    from prme.settings import Settings

Handler = TypeVar("Handler", bound=Callable[..., Any])


class ContentFreeFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON, with exceptions as type and frames only: an exception's message can
    quote the input that caused it, which may be memory content."""

    def formatException(self, ei: ExcInfo) -> str:  # noqa: N802
        return exception_text(ei)


@cache
def powertools_tracer() -> Tracer:
    """Powertools' tracer, built on the first invocation: building it imports the X-Ray SDK,
    whose recorder loads botocore's X-Ray client, and with tracing active patches botocore."""
    from aws_lambda_powertools import Tracer

    return Tracer()


def tracing_disabled() -> bool:
    """Powertools' own rule (POWERTOOLS_TRACE_DISABLED, or not running in Lambda): a disabled
    tracer records nothing, so the handler then runs without it and X-Ray is never imported."""
    from aws_lambda_powertools.tracing.tracer import Tracer

    # The rule Tracer() itself applies, so the two cannot disagree.
    return bool(Tracer._is_tracer_disabled())


class DeferredTracer:
    """`capture_lambda_handler` of Powertools' tracer, with the tracer built on first call."""

    def capture_lambda_handler(self, handler: Handler) -> Handler:
        @cache
        def built() -> Callable[..., Any]:
            if tracing_disabled():
                return handler
            return powertools_tracer().capture_lambda_handler(handler)

        @functools.wraps(handler)
        def traced(event: Any, context: Any) -> Any:
            return built()(event, context)

        return cast(Handler, traced)


logger = Logger(logger_formatter=ContentFreeFormatter(serialize_stacktrace=False))
tracer = DeferredTracer()
metrics = Metrics()


@contextmanager
def invocation_deadline(context: LambdaContext) -> Iterator[Deadline | None]:
    """Run the invocation under the function's remaining time, less the margin."""
    remaining_ms = context.get_remaining_time_in_millis() - LAMBDA_MARGIN_MS
    with deadline_scope(max(0, remaining_ms) / 1000) as deadline:
        yield deadline


@contextmanager
def garbage_collection_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: a cold start's imports create hundreds of thousands
    of objects, and the collector would walk them again and again (about an eighth of the API's
    first request in CPU time). At the outermost exit what was built is frozen (moved out of the
    collector's generations: it lives as long as the container) and collection resumes."""
    import gc

    if not gc.isenabled():
        yield  # nested, or paused by someone else: theirs to resume
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


@contextmanager
def deferred_model_builds() -> Iterator[None]:
    """pydantic models whose classes are created inside are built on first use, not at class
    creation (pydantic's `defer_build`, set on BaseModel's config for the duration only).

    A cold start imports some 240 model classes (ours, FastAPI's OpenAPI document, the
    settings) and its request uses a few: each one built when it first validates,
    serializes or gives its schema. Classes created before or after keep pydantic's default."""
    from pydantic import BaseModel

    config = BaseModel.model_config
    previous = config.get("defer_build")
    config["defer_build"] = True
    try:
        yield
    finally:
        if previous is None:
            config.pop("defer_build", None)
        else:
            config["defer_build"] = previous


@cache
def settings() -> Settings:
    from prme.settings import Settings

    return Settings()


def _search_index_refused(reason: str) -> None:
    from prme.backends.aws.resources import SEARCH_INDEX_REFUSED_METRIC

    logger.error("search index refused", extra={"reason": reason})
    metrics.add_metric(name=SEARCH_INDEX_REFUSED_METRIC, unit=MetricUnit.Count, value=1)


def _usage_not_recorded(entries: int) -> None:
    from prme.backends.aws.resources import USAGE_NOT_RECORDED_METRIC

    metrics.add_metric(name=USAGE_NOT_RECORDED_METRIC, unit=MetricUnit.Count, value=entries)


def _with_tenant_metrics(usage: UsageLog) -> UsageLog:
    from functions.usage_metrics import TenantMetricsUsageLog

    return TenantMetricsUsageLog(usage, _usage_not_recorded)


@cache
def backend() -> AwsBackend:
    """Opened on the first invocation, not at import: cold start stays free of I/O."""
    with garbage_collection_paused():
        with deferred_model_builds():
            from prme.backends.aws.service import open_aws
            from prme.composition import build_embedder, build_extractor

            current = settings()
        return open_aws(
            current,
            embedder=build_embedder(current),
            extractor=build_extractor(current),
            on_index_refused=_search_index_refused,
            observe_usage=_with_tenant_metrics,
        )
