"""Alarms on every part of the stack (API, queues, functions, search, table, Bedrock), one
dashboard, optional e-mail via SNS. docs/operations.md says what each alarm means."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_opensearchservice as opensearch
from constructs import Construct

from infra.components.alarm_topic import alarm_topic
from infra.components.function_factory import POWERTOOLS_METRICS_NAMESPACE
from infra.components.queues import Queues
from infra.config import DeploymentConfig
from prme.backends.aws.resources import (
    OVERDUE_WORK_FAILED_METRIC,
    SEARCH_INDEX_REFUSED_METRIC,
    USAGE_NOT_RECORDED_METRIC,
)

_PERIOD = Duration.minutes(5)
_MINUTE = Duration.minutes(1)
_ABOVE = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
_AT_LEAST = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
_AT_MOST = cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD
# The ledger retries a throttled DynamoDB call with backoff (five attempts) and the
# embedder/extractor calls end in pending work that is retried: a few throttles are
# absorbed. This many in five minutes is sustained pressure, not a burst.
THROTTLE_THRESHOLD = 10
# AWS's guidance for OpenSearch Service: JVM memory pressure at 95 % for three minutes
# comes before out-of-memory errors and blocked writes.
JVM_PRESSURE_PERCENT = 95
# A quarter of a data node's volume free (FreeStorageSpace is per node, in MiB): below
# it the domain nears the disk watermarks at which OpenSearch stops allocating and then
# blocks writes.
FREE_STORAGE_FRACTION = 0.25
# A t3.small.search earns 24 CPU credits an hour; under 10 left, the node is half an hour
# of busy work from being held to its baseline CPU (searches slow down for everybody).
CPU_CREDITS_LOW = 10


@dataclass(frozen=True)
class Watched:
    """What the monitoring construct watches besides queues and functions."""

    stage: apigwv2.HttpStage
    table: dynamodb.ITable
    domain: opensearch.Domain


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        queues: Queues,
        functions: dict[str, lambda_.Function],
        watched: Watched,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = alarm_topic(self, config.alarm_email) if config.alarm_email else None
        self.alarms: list[cloudwatch.Alarm] = []
        self._dashboard = cloudwatch.Dashboard(self, "Dashboard")
        self._api(config, watched.stage)
        self._queues(config, queues)
        self._functions(functions)
        self._search(config, watched.domain)
        self._table(watched.table)
        self._bedrock(config)

    def _api(self, config: DeploymentConfig, stage: apigwv2.HttpStage) -> None:
        server_errors = stage.metric_server_error(period=_PERIOD, statistic="Sum", label="5xx")
        latency = stage.metric_latency(period=_PERIOD, statistic="p99", label="p99 latency")
        self._alarm(
            "ApiServerErrors",
            server_errors,
            config.alarm_api_server_errors,
            "API answered 5xx more often than usual",
        )
        # Three periods: one slow batch of cold starts is not an incident.
        self._alarm(
            "ApiLatencyP99",
            latency,
            config.alarm_api_p99_latency_ms,
            "API p99 latency is high",
            evaluation_periods=3,
        )
        self._widgets(
            cloudwatch.GraphWidget(title="API 5xx", left=[server_errors], width=12),
            cloudwatch.GraphWidget(title="API p99 latency (ms)", left=[latency], width=12),
        )

    def _queues(self, config: DeploymentConfig, queues: Queues) -> None:
        dead_letters: list[cloudwatch.IMetric] = []
        ages: list[cloudwatch.IMetric] = []
        for purpose, queue in queues.by_purpose.items():
            name = purpose.capitalize()
            dead = queue.dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=_PERIOD, statistic="Maximum", label=f"{purpose} DLQ"
            )
            age = queue.queue.metric_approximate_age_of_oldest_message(
                period=_PERIOD, statistic="Maximum", label=purpose
            )
            dead_letters.append(dead)
            ages.append(age)
            self._alarm(f"{name}DeadLetters", dead, 0, f"{purpose} DLQ has messages")
            self._alarm(
                f"{name}OldestMessage",
                age,
                config.alarm_queue_age_seconds,
                f"{purpose} queue has old messages: consumers are behind or failing",
            )
        self._widgets(
            cloudwatch.GraphWidget(title="Dead-letter messages", left=dead_letters, width=12),
            cloudwatch.GraphWidget(title="Oldest work message (s)", left=ages, width=12),
        )

    def _functions(self, functions: dict[str, lambda_.Function]) -> None:
        errors: list[cloudwatch.IMetric] = []
        throttles: list[cloudwatch.IMetric] = []
        for name, function in functions.items():
            error_metric = function.metric_errors(period=_PERIOD, label=name)
            throttle_metric = function.metric_throttles(period=_PERIOD, label=name)
            errors.append(error_metric)
            throttles.append(throttle_metric)
            self._alarm(f"{name.capitalize()}Errors", error_metric, 0, f"{name} function errors")
            self._alarm(
                f"{name.capitalize()}Throttles", throttle_metric, 0, f"{name} function throttled"
            )
        refused = self._search_index_refused(functions)
        self._alarm(
            "SearchIndexRefused",
            refused,
            0,
            "a function refused the search index (alias missing, or another vector dimension "
            "or engine): see docs/deployment.md, 'The search index'",
        )
        lost = self._summed_over_functions(
            functions, USAGE_NOT_RECORDED_METRIC, "usage entries not recorded"
        )
        # A lost entry is an operation missing from the tenant's bill (docs/usage.md).
        self._alarm(
            "UsageNotRecorded",
            lost,
            0,
            "a function could not save usage entries: the usage log under-counts (docs/usage.md)",
        )
        gave_up = cloudwatch.Metric(
            namespace=POWERTOOLS_METRICS_NAMESPACE,
            metric_name=OVERDUE_WORK_FAILED_METRIC,
            dimensions_map={"service": "prme-maintenance"},
            statistic="Sum",
            period=_PERIOD,
            label="work failed by the sweeper",
        )
        # Work the sweeper fails never reaches a dead-letter queue, so no DLQ alarm sees it.
        self._alarm(
            "OverdueWorkFailed",
            gave_up,
            0,
            "the maintenance sweeper failed work that stayed pending through its re-announcements",
        )
        self._widgets(
            cloudwatch.GraphWidget(title="Function errors", left=errors, width=8),
            cloudwatch.GraphWidget(title="Function throttles", left=throttles, width=8),
            cloudwatch.GraphWidget(
                title="Search index refusals, work failed by the sweeper",
                left=[refused, gave_up],
                width=8,
            ),
        )

    def _search(self, config: DeploymentConfig, domain: opensearch.Domain) -> None:
        red = domain.metric_cluster_status_red(period=_MINUTE, statistic="Maximum")
        yellow = domain.metric_cluster_status_yellow(period=_MINUTE, statistic="Maximum")
        free = domain.metric_free_storage_space(period=_MINUTE, statistic="Minimum")
        jvm = domain.metric_jvm_memory_pressure(period=_MINUTE, statistic="Maximum")
        self._alarm("SearchClusterRed", red, 1, "search cluster is red", comparison=_AT_LEAST)
        # Five minutes: a node restart (a blue/green update) turns the cluster yellow
        # for a while by design.
        self._alarm(
            "SearchClusterYellow",
            yellow,
            1,
            "search cluster is yellow",
            comparison=_AT_LEAST,
            evaluation_periods=5,
        )
        self._alarm(
            "SearchFreeStorage",
            free,
            round(config.search_volume_gb * 1024 * FREE_STORAGE_FRACTION),
            "search node has under a quarter of its volume free",
            comparison=_AT_MOST,
        )
        self._alarm(
            "SearchJvmPressure",
            jvm,
            JVM_PRESSURE_PERCENT,
            "search JVM memory pressure is high",
            comparison=_AT_LEAST,
            evaluation_periods=3,
        )
        health: list[cloudwatch.IMetric] = [red, yellow]
        resources: list[cloudwatch.IMetric] = [jvm]
        if config.search_is_burstable:
            credits_left = domain.metric(
                "CPUCreditBalance", period=_PERIOD, statistic="Minimum", label="CPU credits"
            )
            resources.append(credits_left)
            self._alarm(
                "SearchCpuCredits",
                credits_left,
                CPU_CREDITS_LOW,
                "search node is running out of CPU credits",
                comparison=_AT_MOST,
            )
        self._widgets(
            cloudwatch.GraphWidget(title="Search cluster red / yellow", left=health, width=8),
            cloudwatch.GraphWidget(title="Search free storage (MiB)", left=[free], width=8),
            cloudwatch.GraphWidget(
                title="Search JVM pressure, CPU credits", left=resources, width=8
            ),
        )

    def _table(self, table: dynamodb.ITable) -> None:
        throttled: list[cloudwatch.IMetric] = []
        for kind in ("Read", "Write"):
            metric = table.metric(
                f"{kind}ThrottleEvents", period=_PERIOD, statistic="Sum", label=kind.lower()
            )
            throttled.append(metric)
            self._alarm(
                f"Table{kind}Throttles",
                metric,
                THROTTLE_THRESHOLD,
                f"table {kind.lower()}s throttled",
            )
        self._widgets(cloudwatch.GraphWidget(title="Table throttles", left=throttled, width=12))

    def _bedrock(self, config: DeploymentConfig) -> None:
        throttled: list[cloudwatch.IMetric] = []
        models = {"Embedding": config.embedding_model_id, "Extraction": config.extraction_model_id}
        for purpose, model_id in models.items():
            metric = cloudwatch.Metric(
                namespace="AWS/Bedrock",
                metric_name="InvocationThrottles",
                dimensions_map={"ModelId": model_id},
                period=_PERIOD,
                statistic="Sum",
                label=purpose.lower(),
            )
            throttled.append(metric)
            self._alarm(
                f"Bedrock{purpose}Throttles",
                metric,
                THROTTLE_THRESHOLD,
                f"Bedrock throttles the {purpose.lower()} model",
            )
        self._widgets(cloudwatch.GraphWidget(title="Bedrock throttles", left=throttled, width=12))

    @staticmethod
    def _search_index_refused(functions: dict[str, lambda_.Function]) -> cloudwatch.IMetric:
        return Monitoring._summed_over_functions(
            functions, SEARCH_INDEX_REFUSED_METRIC, "search index refusals"
        )

    @staticmethod
    def _summed_over_functions(
        functions: dict[str, lambda_.Function], metric_name: str, label: str
    ) -> cloudwatch.IMetric:
        # Powertools puts each function's metrics under its service name (prme-<name>).
        counts = {
            f"m{i}": cloudwatch.Metric(
                namespace=POWERTOOLS_METRICS_NAMESPACE,
                metric_name=metric_name,
                dimensions_map={"service": f"prme-{name}"},
                statistic="Sum",
                period=_PERIOD,
            )
            for i, name in enumerate(functions)
        }
        return cloudwatch.MathExpression(
            expression=" + ".join(f"FILL({key}, 0)" for key in counts),
            using_metrics=counts,
            period=_PERIOD,
            label=label,
        )

    def _widgets(self, *widgets: cloudwatch.IWidget) -> None:
        self._dashboard.add_widgets(*widgets)

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        threshold: float,
        description: str,
        *,
        comparison: cloudwatch.ComparisonOperator = _ABOVE,
        evaluation_periods: int = 1,
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"{description}; see docs/operations.md",
        )
        if self.topic is not None:
            alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms.append(alarm)
