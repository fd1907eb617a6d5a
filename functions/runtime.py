"""What every entry point shares: settings and the AWS backend, built once per container, lazily."""

from __future__ import annotations

from functools import cache

from aws_lambda_powertools import Logger, Metrics, Tracer

from prme.backends.aws.service import AwsBackend, open_aws
from prme.composition import build_embedder, build_extractor
from prme.settings import Settings

logger = Logger()
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
