"""What every entry point shares: settings and the AWS backend, built once per container, lazily."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.limits import LAMBDA_MARGIN_MS
from functions.usage_metrics import TenantMetricsUsageLog
from prme.backends.aws.resources import SEARCH_INDEX_REFUSED_METRIC, USAGE_NOT_RECORDED_METRIC
from prme.backends.aws.service import AwsBackend, open_aws
from prme.composition import build_embedder, build_extractor
from prme.engine.deadlines import Deadline, deadline_scope
from prme.logs import ExcInfo, exception_text
from prme.ports import UsageLog
from prme.settings import Settings


class ContentFreeFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON, with exceptions as type and frames only: an exception's message can
    quote the input that caused it, which may be memory content."""

    def formatException(self, ei: ExcInfo) -> str:  # noqa: N802
        return exception_text(ei)


logger = Logger(logger_formatter=ContentFreeFormatter(serialize_stacktrace=False))
tracer = Tracer()
metrics = Metrics()


@contextmanager
def invocation_deadline(context: LambdaContext) -> Iterator[Deadline | None]:
    """Run the invocation under the function's remaining time, less the margin."""
    remaining_ms = context.get_remaining_time_in_millis() - LAMBDA_MARGIN_MS
    with deadline_scope(max(0, remaining_ms) / 1000) as deadline:
        yield deadline


@cache
def settings() -> Settings:
    return Settings()


def _search_index_refused(reason: str) -> None:
    logger.error("search index refused", extra={"reason": reason})
    metrics.add_metric(name=SEARCH_INDEX_REFUSED_METRIC, unit=MetricUnit.Count, value=1)


def _usage_not_recorded(entries: int) -> None:
    metrics.add_metric(name=USAGE_NOT_RECORDED_METRIC, unit=MetricUnit.Count, value=entries)


def _with_tenant_metrics(usage: UsageLog) -> UsageLog:
    return TenantMetricsUsageLog(usage, _usage_not_recorded)


@cache
def backend() -> AwsBackend:
    """Opened on the first invocation, not at import: cold start stays free of I/O."""
    current = settings()
    return open_aws(
        current,
        embedder=build_embedder(current),
        extractor=build_extractor(current),
        on_index_refused=_search_index_refused,
        observe_usage=_with_tenant_metrics,
    )
