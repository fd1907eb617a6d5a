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
from pydantic import ValidationError

from prme.model.limits import TenantLimits
from prme.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTION_NAMES = ("api", "materializer", "ingest", "maintenance", "extractor")
# The functions an SQS event source mapping invokes, each from one queue.
QUEUE_CONSUMERS = ("materializer", "extractor", "ingest")
# What Lambda accepts as an SQS event source mapping's ScalingConfig.MaximumConcurrency.
MAPPING_CONCURRENCY_RANGE = (2, 1000)


def _setting_default(field: str) -> str:
    return str(Settings.model_fields[field].default)


def _setting_maximum(field: str) -> int:
    """The `le` bound of a numeric setting: the stack must not set what the functions refuse."""
    for rule in Settings.model_fields[field].metadata:
        bound = getattr(rule, "le", None)
        if isinstance(bound, int):
            return bound
    raise LookupError(f"setting {field} has no upper bound")


CONTEXT_DEFAULTS: dict[str, Any] = {
    "prme:resourcePrefix": "prme",
    "prme:lambdaAsset": "build/lambda",
    # A profile picks the search domain's shape (see PROFILES); any `prme:search*` key
    # given explicitly overrides its profile value.
    "prme:profile": "development",
    # Alarm thresholds an operator tunes to the deployment's traffic (docs/operations.md).
    # 5xx answers per five minutes: PRME answers 503 by design while a dependency is down
    # (with `accepted: true` when the source was kept), so a few are expected in a blip.
    "prme:alarmApiServerErrors": 5,
    # p99 of the API's latency: far below the 25 s request budget, so degrading
    # dependencies show before requests start ending in pending answers.
    "prme:alarmApiP99LatencyMs": 5000,
    # A work message this old means the consumers are not keeping up (or keep failing it):
    # a healthy one is consumed within seconds.
    "prme:alarmQueueAgeSeconds": 600,
    "prme:searchIndexAlias": _setting_default("opensearch_index_alias"),
    "prme:embeddingModelId": _setting_default("bedrock_embedding_model_id"),
    "prme:extractionModelId": "anthropic.claude-3-haiku-20240307-v1:0",
    "prme:apiRateLimit": 50,
    "prme:apiBurstLimit": 100,
    # Every tenant's limits unless the provider sets its own (`prme limits set`); "none" is
    # unlimited. The stage throttle above stays as the outer guard of the whole API; these are
    # what keeps one tenant from taking all of it (docs/limits.md).
    "prme:tenantRequestsPerSecond": 20,
    "prme:tenantBurst": 40,
    "prme:tenantStoredRecords": "none",
    "prme:tenantStoredBytes": "none",
    "prme:tenantRetrievalsPerDay": "none",
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


# The search domain's shape by profile. `development` is the cheapest domain that works;
# `production` spreads three data nodes over three zones with dedicated masters, one
# replica of every shard (a node or a zone can go without losing the index) and
# non-burstable Graviton instances (burstable CPU runs out under steady load).
PROFILES: dict[str, dict[str, Any]] = {
    "development": {
        "prme:searchInstanceType": "t3.small.search",
        "prme:searchInstanceCount": 1,
        "prme:searchVolumeGb": 10,
        "prme:searchMasterInstanceType": "none",
        "prme:searchReplicas": 0,
    },
    "production": {
        "prme:searchInstanceType": "r7g.large.search",
        "prme:searchInstanceCount": 3,
        "prme:searchVolumeGb": 100,
        "prme:searchMasterInstanceType": "m7g.large.search",
        "prme:searchReplicas": 1,
    },
}
DEDICATED_MASTER_COUNT = 3
# Instance families that run on CPU credits; their domains get a credit-balance alarm.
BURSTABLE_FAMILIES = ("t2.", "t3.")


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
    if value is not None:
        return value
    if key in CONTEXT_DEFAULTS:
        return CONTEXT_DEFAULTS[key]
    return PROFILES[_profile(node)][key]


def _profile(node: Node) -> str:
    name = str(node.try_get_context("prme:profile") or CONTEXT_DEFAULTS["prme:profile"]).strip()
    if name not in PROFILES:
        raise ContextError(f"context prme:profile must be one of {sorted(PROFILES)}, got {name!r}")
    return name


def _text(node: Node, key: str) -> str:
    value = str(_raw(node, key)).strip()
    if not value and CONTEXT_DEFAULTS.get(key, True):
        raise ContextError(f"context {key} must not be empty")
    return value


def _whole_number(node: Node, key: str, minimum: int) -> int:
    value = _raw(node, key)
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise ContextError(f"context {key} must be a whole number, got {value!r}") from exc
    if number < minimum:
        raise ContextError(f"context {key} must be at least {minimum}, got {number}")
    return number


def _positive_int(node: Node, key: str) -> int:
    return _whole_number(node, key, 1)


def _optional_text(node: Node, key: str) -> str | None:
    value = _text(node, key)
    return None if value.lower() == "none" else value


def _optional_int(node: Node, key: str) -> int | None:
    if str(_raw(node, key)).strip().lower() == "none":
        return None
    return _positive_int(node, key)


def _optional_count(node: Node, key: str) -> int | None:
    if str(_raw(node, key)).strip().lower() == "none":
        return None
    return _whole_number(node, key, 0)


# Each default tenant limit's context key and the TenantLimits field it sets.
TENANT_LIMIT_CONTEXT = {
    "prme:tenantRequestsPerSecond": "requests_per_second",
    "prme:tenantBurst": "burst",
    "prme:tenantStoredRecords": "stored_records",
    "prme:tenantStoredBytes": "stored_bytes",
    "prme:tenantRetrievalsPerDay": "retrievals_per_day",
}


def _tenant_limits(node: Node) -> TenantLimits:
    values = {field: _optional_count(node, key) for key, field in TENANT_LIMIT_CONTEXT.items()}
    try:
        return TenantLimits(**values)
    except ValidationError as exc:
        # The functions would refuse to start with it: say which context value is wrong.
        first = exc.errors(include_input=False, include_url=False)[0]
        field = str(first["loc"][0])
        key = next(k for k, f in TENANT_LIMIT_CONTEXT.items() if f == field)
        raise ContextError(f"context {key}: {first['msg']}") from None


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
    search_master_instance_type: str | None
    search_replicas: int
    search_index_alias: str
    embedding_model_id: str
    extraction_model_id: str
    api_rate_limit: int
    api_burst_limit: int
    # The default per-tenant limits the api function enforces (PRME_LIMITS__...).
    tenant_limits: TenantLimits
    reserved_concurrency: dict[str, int | None]
    # MaximumConcurrency of the SQS event source mapping of each queue consumer.
    max_concurrency: dict[str, int]
    log_retention: logs.RetentionDays
    alarm_email: str
    profile: str
    alarm_api_server_errors: int
    alarm_api_p99_latency_ms: int
    alarm_queue_age_seconds: int

    @property
    def search_is_burstable(self) -> bool:
        return self.search_instance_type.startswith(BURSTABLE_FAMILIES)

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
        count = _positive_int(node, "prme:searchInstanceCount")
        replicas = _whole_number(node, "prme:searchReplicas", 0)
        if replicas >= count:
            # A replica never shares a node with its primary: it would stay unassigned and
            # the cluster yellow for good.
            raise ContextError(
                f"context prme:searchReplicas={replicas} needs more than {replicas} data "
                f"nodes; prme:searchInstanceCount is {count}"
            )
        most = _setting_maximum("opensearch_replicas")
        if replicas > most:
            # Every function reads PRME_OPENSEARCH_REPLICAS and would refuse to start.
            raise ContextError(
                f"context prme:searchReplicas must be at most {most}, got {replicas}"
            )
        return cls(
            resource_prefix=_text(node, "prme:resourcePrefix"),
            lambda_asset=asset if asset.is_absolute() else REPO_ROOT / asset,
            search_instance_type=_text(node, "prme:searchInstanceType"),
            search_instance_count=count,
            search_volume_gb=_positive_int(node, "prme:searchVolumeGb"),
            search_master_instance_type=_optional_text(node, "prme:searchMasterInstanceType"),
            search_replicas=replicas,
            search_index_alias=_text(node, "prme:searchIndexAlias"),
            embedding_model_id=_text(node, "prme:embeddingModelId"),
            extraction_model_id=_text(node, "prme:extractionModelId"),
            api_rate_limit=_positive_int(node, "prme:apiRateLimit"),
            api_burst_limit=_positive_int(node, "prme:apiBurstLimit"),
            tenant_limits=_tenant_limits(node),
            reserved_concurrency={
                name: _optional_int(node, f"prme:{name}ReservedConcurrency")
                for name in FUNCTION_NAMES
            },
            max_concurrency={
                name: _positive_int(node, f"prme:{name}MaxConcurrency") for name in QUEUE_CONSUMERS
            },
            log_retention=_retention(_positive_int(node, "prme:logRetentionDays")),
            alarm_email=_text(node, "prme:alarmEmail"),
            profile=_profile(node),
            alarm_api_server_errors=_positive_int(node, "prme:alarmApiServerErrors"),
            alarm_api_p99_latency_ms=_positive_int(node, "prme:alarmApiP99LatencyMs"),
            alarm_queue_age_seconds=_positive_int(node, "prme:alarmQueueAgeSeconds"),
        )
