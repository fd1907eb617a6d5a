"""What every entry point shares: settings and the AWS backend, built once per container, lazily."""

from __future__ import annotations

from functools import cache

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from prme.backends.aws.service import AwsBackend, open_aws
from prme.composition import build_embedder, build_extractor
from prme.logs import ExcInfo, exception_text
from prme.settings import Settings


class ContentFreeFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON, with exceptions as type and frames only: an exception's message can
    quote the input that caused it, which may be memory content."""

    def formatException(self, ei: ExcInfo) -> str:  # noqa: N802
        return exception_text(ei)


logger = Logger(logger_formatter=ContentFreeFormatter(serialize_stacktrace=False))
tracer = Tracer()
metrics = Metrics()


@cache
def settings() -> Settings:
    return Settings()


@cache
def backend() -> AwsBackend:
    """Opened on the first invocation, not at import: cold start stays free of I/O."""
    current = settings()
    return open_aws(current, embedder=build_embedder(current), extractor=build_extractor(current))
