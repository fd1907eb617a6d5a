"""The SNS topic alarms notify: encrypted with its own KMS key, one e-mail subscription."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

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


def alarm_topic(scope: Construct, email: str) -> sns.Topic:
    # CloudWatch cannot publish to a topic under the AWS managed SNS key: it needs a
    # customer managed key whose policy lets the alarm service use it.
    key = kms.Key(
        scope,
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
    topic = sns.Topic(scope, "AlarmTopic", master_key=key, enforce_ssl=True)
    topic.add_subscription(subscriptions.EmailSubscription(email))
    return topic
