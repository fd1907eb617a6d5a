"""Deployment parameters read from CDK context (`-c prme:...` or cdk.json), checked once.

The defaults live here only; `infra/cdk.json` repeats them for discoverability and a test
keeps the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import aws_logs as logs
from constructs import Node

from prme.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTION_NAMES = ("api", "materializer", "ingest", "maintenance", "extractor")
# The functions an SQS event source mapping invokes, each from one queue.
QUEUE_CONSUMERS = ("materializer", "extractor", "ingest")
# What Lambda accepts as an SQS event source mapping's ScalingConfig.MaximumConcurrency.
MAPPING_CONCURRENCY_RANGE = (2, 1000)


def _setting_default(field: str) -> str:
    return str(Settings.model_fields[field].default)


CONTEXT_DEFAULTS: dict[str, Any] = {
    "prme:resourcePrefix": "prme",
    "prme:lambdaAsset": "build/lambda",
    "prme:searchInstanceType": "t3.small.search",
    "prme:searchInstanceCount": 1,
    "prme:searchVolumeGb": 10,
    "prme:searchIndexAlias": _setting_default("opensearch_index_alias"),
    "prme:embeddingModelId": _setting_default("bedrock_embedding_model_id"),
    "prme:extractionModelId": "anthropic.claude-3-haiku-20240307-v1:0",
    "prme:apiRateLimit": 50,
    "prme:apiBurstLimit": 100,
    # "none" leaves a function on the account's unreserved pool. The workers are capped so
    # a backlog cannot starve the API or overload the search domain; one maintenance
    # instance at a time keeps sweeper passes from overlapping.
    "prme:apiReservedConcurrency": "none",
    "prme:materializerReservedConcurrency": 5,
    "prme:ingestReservedConcurrency": 2,
    "prme:maintenanceReservedConcurrency": 1,
    # Extraction (one Converse call per message) and the concurrent batches each SQS event
    # source mapping may run (MaximumConcurrency, 2 to 1000). A mapping runs at most its
    # function's reserved concurrency, so no batch is throttled and no receive is spent on a
    # throttle; the extractor's cap also keeps Converse calls below the model's quota.
    "prme:extractorReservedConcurrency": 4,
    "prme:materializerMaxConcurrency": 5,
    "prme:extractorMaxConcurrency": 4,
    "prme:ingestMaxConcurrency": 2,
    "prme:logRetentionDays": 30,
    # Empty: alarms have no action. An address: an encrypted SNS topic mails it.
    "prme:alarmEmail": "",
}


# The retention periods CloudWatch Logs accepts that a deployment is likely to want.
_RETENTION = {
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


class ContextError(ValueError):
    """A context parameter that cannot be used as given."""


def _raw(node: Node, key: str) -> Any:
    value = node.try_get_context(key)
    return CONTEXT_DEFAULTS[key] if value is None else value


def _text(node: Node, key: str) -> str:
    value = str(_raw(node, key)).strip()
    if not value and CONTEXT_DEFAULTS[key]:
        raise ContextError(f"context {key} must not be empty")
    return value


def _positive_int(node: Node, key: str) -> int:
    value = _raw(node, key)
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise ContextError(f"context {key} must be a whole number, got {value!r}") from exc
    if number < 1:
        raise ContextError(f"context {key} must be at least 1, got {number}")
    return number


def _optional_int(node: Node, key: str) -> int | None:
    if str(_raw(node, key)).strip().lower() == "none":
        return None
    return _positive_int(node, key)


def _retention(days: int) -> logs.RetentionDays:
    if days not in _RETENTION:
        raise ContextError(f"context prme:logRetentionDays must be one of {sorted(_RETENTION)}")
    return _RETENTION[days]


@dataclass(frozen=True)
class DeploymentConfig:
    resource_prefix: str
    lambda_asset: Path
    search_instance_type: str
    search_instance_count: int
    search_volume_gb: int
    search_index_alias: str
    embedding_model_id: str
    extraction_model_id: str
    api_rate_limit: int
    api_burst_limit: int
    reserved_concurrency: dict[str, int | None]
    # MaximumConcurrency of the SQS event source mapping of each queue consumer.
    max_concurrency: dict[str, int]
    log_retention: logs.RetentionDays
    alarm_email: str

    def __post_init__(self) -> None:
        low, high = MAPPING_CONCURRENCY_RANGE
        for name, concurrency in self.max_concurrency.items():
            key = f"prme:{name}MaxConcurrency"
            if not low <= concurrency <= high:
                raise ContextError(f"context {key} must be from {low} to {high}, got {concurrency}")
            reserved = self.reserved_concurrency.get(name)
            if reserved is not None and concurrency > reserved:
                raise ContextError(
                    f"context {key} ({concurrency}) exceeds prme:{name}ReservedConcurrency "
                    f"({reserved}): the {name}'s queue mapping would start batches the "
                    "function may not run, and every throttled batch spends a receive on the "
                    "way to the dead-letter queue. Lower the first or raise the second."
                )

    @classmethod
    def from_context(cls, node: Node) -> DeploymentConfig:
        asset = Path(_text(node, "prme:lambdaAsset"))
        return cls(
            resource_prefix=_text(node, "prme:resourcePrefix"),
            lambda_asset=asset if asset.is_absolute() else REPO_ROOT / asset,
            search_instance_type=_text(node, "prme:searchInstanceType"),
            search_instance_count=_positive_int(node, "prme:searchInstanceCount"),
            search_volume_gb=_positive_int(node, "prme:searchVolumeGb"),
            search_index_alias=_text(node, "prme:searchIndexAlias"),
            embedding_model_id=_text(node, "prme:embeddingModelId"),
            extraction_model_id=_text(node, "prme:extractionModelId"),
            api_rate_limit=_positive_int(node, "prme:apiRateLimit"),
            api_burst_limit=_positive_int(node, "prme:apiBurstLimit"),
            reserved_concurrency={
                name: _optional_int(node, f"prme:{name}ReservedConcurrency")
                for name in FUNCTION_NAMES
            },
            max_concurrency={
                name: _positive_int(node, f"prme:{name}MaxConcurrency") for name in QUEUE_CONSUMERS
            },
            log_retention=_retention(_positive_int(node, "prme:logRetentionDays")),
            alarm_email=_text(node, "prme:alarmEmail"),
        )
