"""Alarms on dead letters, function errors and throttles; one dashboard; optional e-mail via SNS."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.components.function_factory import POWERTOOLS_METRICS_NAMESPACE
from infra.components.queues import Queues
from infra.config import DeploymentConfig
from prme.backends.aws.resources import SEARCH_INDEX_REFUSED_METRIC

_PERIOD = Duration.minutes(5)
# Spelled out instead of the default `kms:*` for the account: administration only.
_KEY_ADMIN_ACTIONS = (
    "kms:DescribeKey",
    "kms:GetKeyPolicy",
    "kms:PutKeyPolicy",
    "kms:GetKeyRotationStatus",
    "kms:EnableKeyRotation",
    "kms:EnableKey",
    "kms:DisableKey",
    "kms:ListResourceTags",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:UpdateKeyDescription",
    "kms:ScheduleKeyDeletion",
    "kms:CancelKeyDeletion",
)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        queues: Queues,
        functions: dict[str, lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = self._topic(config.alarm_email) if config.alarm_email else None
        self.alarms: list[cloudwatch.Alarm] = []
        dashboard = cloudwatch.Dashboard(self, "Dashboard")

        dlq_metrics: list[cloudwatch.IMetric] = []
        for purpose, queue in queues.by_purpose.items():
            metric = queue.dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=_PERIOD, statistic="Maximum", label=f"{purpose} DLQ"
            )
            dlq_metrics.append(metric)
            self._alarm(f"{purpose.capitalize()}DeadLetters", metric, f"{purpose} DLQ has messages")

        errors: list[cloudwatch.IMetric] = []
        throttles: list[cloudwatch.IMetric] = []
        for name, function in functions.items():
            error_metric = function.metric_errors(period=_PERIOD, label=name)
            throttle_metric = function.metric_throttles(period=_PERIOD, label=name)
            errors.append(error_metric)
            throttles.append(throttle_metric)
            self._alarm(f"{name.capitalize()}Errors", error_metric, f"{name} function errors")
            self._alarm(
                f"{name.capitalize()}Throttles", throttle_metric, f"{name} function throttled"
            )

        self._alarm(
            "SearchIndexRefused",
            self._search_index_refused(functions),
            "a function refused the search index (alias missing, or another vector dimension "
            "or engine): see docs/deployment.md, 'The search index'",
        )

        dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Dead-letter messages", left=dlq_metrics, width=8),
            cloudwatch.GraphWidget(title="Function errors", left=errors, width=8),
            cloudwatch.GraphWidget(title="Function throttles", left=throttles, width=8),
        )

    @staticmethod
    def _search_index_refused(functions: dict[str, lambda_.Function]) -> cloudwatch.IMetric:
        # Powertools puts each function's metrics under its service name (prme-<name>).
        refusals = {
            f"m{i}": cloudwatch.Metric(
                namespace=POWERTOOLS_METRICS_NAMESPACE,
                metric_name=SEARCH_INDEX_REFUSED_METRIC,
                dimensions_map={"service": f"prme-{name}"},
                statistic="Sum",
                period=_PERIOD,
            )
            for i, name in enumerate(functions)
        }
        return cloudwatch.MathExpression(
            expression=" + ".join(f"FILL({key}, 0)" for key in refusals),
            using_metrics=refusals,
            period=_PERIOD,
            label="search index refusals",
        )

    def _alarm(self, construct_id: str, metric: cloudwatch.IMetric, description: str) -> None:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        if self.topic is not None:
            alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms.append(alarm)

    def _topic(self, email: str) -> sns.Topic:
        # CloudWatch cannot publish to a topic under the AWS managed SNS key: it needs a
        # customer managed key whose policy lets the alarm service use it.
        key = kms.Key(
            self,
            "AlarmTopicKey",
            enable_key_rotation=True,
            policy=iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        sid="AccountAdministersTheKey",
                        principals=[iam.AccountRootPrincipal()],
                        actions=list(_KEY_ADMIN_ACTIONS),
                        resources=["*"],  # in a key policy `*` means this key
                    ),
                    iam.PolicyStatement(
                        sid="AlarmsPublishToTheTopic",
                        principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                        actions=["kms:Decrypt", "kms:GenerateDataKey"],
                        resources=["*"],
                    ),
                ]
            ),
        )
        topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        topic.add_subscription(subscriptions.EmailSubscription(email))
        return topic
