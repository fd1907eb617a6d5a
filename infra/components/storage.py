"""The ledger table: keys and GSIs come from `prme.backends.aws.resources`, so code and stack agree."""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra.components.checkov_skips import skip
from prme.backends.aws import resources


def _key(key_schema: list[dict[str, Any]], key_type: str) -> dynamodb.Attribute:
    """The HASH or RANGE attribute of a CreateTable KeySchema (all keys are strings)."""
    (name,) = (key["AttributeName"] for key in key_schema if key["KeyType"] == key_type)
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class Storage(Construct):
    """The single DynamoDB table: source of truth, retained when the stack is deleted."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        # The table name is CloudFormation's to choose; functions receive it by environment.
        definition = resources.table_definition("unused")
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=_key(definition["KeySchema"], "HASH"),
            sort_key=_key(definition["KeySchema"], "RANGE"),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=resources.TTL_ATTRIBUTE,
            removal_policy=RemovalPolicy.RETAIN,
            deletion_protection=True,
        )
        skip(
            self.table,
            "CKV_AWS_119",
            "Encrypted at rest with the AWS managed key (aws/dynamodb); a customer managed key "
            "would have to outlive the retained table and adds key administration, while access is "
            "already scoped per function by IAM.",
        )
        for index in definition["GlobalSecondaryIndexes"]:
            if index["Projection"]["ProjectionType"] != "ALL":
                raise ValueError(f"GSI {index['IndexName']}: only ALL projections are mapped")
            self.table.add_global_secondary_index(
                index_name=index["IndexName"],
                projection_type=dynamodb.ProjectionType.ALL,
                partition_key=_key(index["KeySchema"], "HASH"),
                sort_key=_key(index["KeySchema"], "RANGE"),
            )
