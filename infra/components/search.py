"""The OpenSearch Service domain: encrypted, HTTPS-only, IAM (SigV4) access for the functions."""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

from aws_cdk import Acknowledgment, CustomResource, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_opensearchservice as opensearch
from constructs import Construct

from infra.components.checkov_skips import skip
from infra.config import DEDICATED_MASTER_COUNT, DeploymentConfig
from prme.backends.aws import resources

ENGINE_VERSION = opensearch.EngineVersion.OPENSEARCH_2_19
# Every HTTP verb the index adapter uses; never `es:*` (that includes domain administration).
HTTP_ACTIONS = (
    "es:ESHttpGet",
    "es:ESHttpHead",
    "es:ESHttpPost",
    "es:ESHttpPut",
    "es:ESHttpDelete",
)
# What creating the index needs (functions/index_setup.py): HEAD and GET to find the alias and
# read the mapping, PUT to create the index, add fields to its mapping and set the alias.
INDEX_SETUP_ACTIONS = ("es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPut")


def _fingerprint(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def _zone_awareness(count: int) -> opensearch.ZoneAwarenessConfig:
    if count == 1:
        return opensearch.ZoneAwarenessConfig(enabled=False)
    zones = 3 if count % 3 == 0 else 2
    if count % zones:
        raise ValueError(
            f"prme:searchInstanceCount={count} cannot spread evenly over availability "
            "zones; use 1, an even number, or a multiple of 3"
        )
    return opensearch.ZoneAwarenessConfig(enabled=True, availability_zone_count=zones)


class Search(Construct):
    """The index is derived data (`prme reindex` rebuilds it), so the domain is not retained."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        retention = config.log_retention
        log_groups = {
            kind: logs.LogGroup(
                self, f"{kind}Logs", retention=retention, removal_policy=RemovalPolicy.DESTROY
            )
            for kind in ("App", "SlowSearch", "SlowIndex")
        }
        # Written here as a plain CloudFormation resource instead of the construct's own
        # custom resource, which would add a Node.js Lambda function to the stack.
        logs_policy = logs.CfnResourcePolicy(
            self,
            "LogsResourcePolicy",
            policy_name=f"{config.resource_prefix}-opensearch-logs",
            policy_document=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "es.amazonaws.com"},
                            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                            "Resource": [group.log_group_arn for group in log_groups.values()],
                        }
                    ],
                }
            ),
        )
        count = config.search_instance_count
        # A fixed name lets the access policy name the domain's ARN without referring to
        # the domain itself (a circular reference).
        domain_name = f"{config.resource_prefix}-search"
        self.paths_arn = Stack.of(self).format_arn(
            service="es", resource="domain", resource_name=f"{domain_name}/*"
        )
        self.domain = opensearch.Domain(
            self,
            "Domain",
            domain_name=domain_name,
            version=ENGINE_VERSION,
            capacity=opensearch.CapacityConfig(
                data_node_instance_type=config.search_instance_type,
                data_nodes=count,
                master_node_instance_type=config.search_master_instance_type,
                master_nodes=DEDICATED_MASTER_COUNT if config.search_master_instance_type else None,
                multi_az_with_standby_enabled=False,
            ),
            ebs=opensearch.EbsOptions(
                volume_size=config.search_volume_gb,
                volume_type=ec2.EbsDeviceVolumeType.GP3,
            ),
            zone_awareness=_zone_awareness(count),
            encryption_at_rest=opensearch.EncryptionAtRestOptions(enabled=True),
            node_to_node_encryption=True,
            enforce_https=True,
            tls_security_policy=opensearch.TLSSecurityPolicy.TLS_1_2,
            logging=opensearch.LoggingOptions(
                app_log_enabled=True,
                app_log_group=log_groups["App"],
                slow_search_log_enabled=True,
                slow_search_log_group=log_groups["SlowSearch"],
                slow_index_log_enabled=True,
                slow_index_log_group=log_groups["SlowIndex"],
            ),
            suppress_logs_resource_policy=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.domain.node.add_dependency(logs_policy)
        skip(
            self.domain,
            "CKV_AWS_317",
            "Audit logs need fine-grained access control, which this domain does not use: access "
            "is the IAM domain policy (SigV4 from the function roles only), and configuration "
            "changes are in CloudTrail.",
        )
        self.paths_acknowledgment = Acknowledgment(
            id=f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:es:<AWS::Region>:"
            f"<AWS::AccountId>:domain/{domain_name}/*]",
            reason="OpenSearch HTTP verbs on paths of this one domain (the index alias, its "
            "versioned indexes, _bulk, _msearch); `domain/<name>/*` is resource-scoped.",
        )
        self._grants: dict[tuple[str, ...], list[iam.IRole]] = {}
        self._acknowledge(count, dedicated_masters=config.search_master_instance_type is not None)

    @property
    def endpoint_url(self) -> str:
        return f"https://{self.domain.domain_endpoint}"

    def grant_http(self, role: iam.IRole, actions: tuple[str, ...] = HTTP_ACTIONS) -> None:
        """`actions` (HTTP verbs) on the domain's paths: in the role's identity policy and in
        the domain's access policy, which in the same account would grant them on its own."""
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[self.paths_arn])
        )
        self._grants.setdefault(actions, []).append(role)
        Validations.of(role).acknowledge(self.paths_acknowledgment)
        self._write_access_policy()

    def _write_access_policy(self) -> None:
        # Set on the CloudFormation resource directly: the construct's `access_policies`
        # would deploy a custom resource (another Lambda function) to apply it.
        cfn = cast(opensearch.CfnDomain, self.domain.node.default_child)
        cfn.access_policies = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": [role.role_arn for role in roles]},
                    "Action": list(granted),
                    "Resource": self.paths_arn,
                }
                for granted, roles in self._grants.items()
            ],
        }

    def create_index(
        self, function: lambda_.Function, *, alias: str, dimension: int
    ) -> CustomResource:
        """The index alias and its versioned index, made at deploy time by `function`
        (functions/index_setup.py) from the application's own definition, for vectors of
        `dimension`. A custom resource served by our own function: CDK's Provider framework
        would add a Node.js function. Deleting the resource leaves the index (derived data)."""
        role = function.role
        if role is None:  # the factory always gives one
            raise ValueError(f"{function.node.path} has no role to create the index with")
        self.grant_http(role, INDEX_SETUP_ACTIONS)
        index = CustomResource(
            self,
            "Index",
            service_token=function.function_arn,
            resource_type="Custom::PrmeSearchIndex",
            # Read by functions/index_setup.py (ALIAS_PROPERTY, DIMENSION_PROPERTY). The
            # mapping's fingerprint is there so that a deploy that changes the index
            # definition updates the resource, which adds new fields to the live index.
            properties={
                "IndexAlias": alias,
                "Dimension": str(dimension),
                "MappingFingerprint": _fingerprint(resources.index_body(dimension)),
            },
        )
        # The domain's access policy must name the role before the function calls the domain.
        index.node.add_dependency(self.domain)
        return index

    def _acknowledge(self, count: int, *, dedicated_masters: bool) -> None:
        acks = [
            Acknowledgment(
                id="AwsSolutions-OS1",
                reason="The functions run outside a VPC (no NAT cost, faster cold starts); the "
                "domain accepts only SigV4-signed requests from the function roles over TLS 1.2.",
            ),
            Acknowledgment(
                id="AwsSolutions-OS3",
                reason="Access is restricted by IAM principal (the function roles) in the "
                "domain access policy, not by source IP: Lambda has no fixed addresses.",
            ),
        ]
        if not dedicated_masters:
            acks.append(
                Acknowledgment(
                    id="AwsSolutions-OS4",
                    reason="Dedicated master nodes pay off at 3+ data nodes (the production "
                    "profile has them); small deployments keep the index rebuildable from the "
                    "ledger instead (prme reindex).",
                )
            )
        if count == 1:
            acks.append(
                Acknowledgment(
                    id="AwsSolutions-OS7",
                    reason="A single data node cannot be zone-aware; set "
                    "prme:searchInstanceCount to 2+ for zone awareness. The index is "
                    "derived data and can be rebuilt from the ledger.",
                )
            )
        Validations.of(self.domain).acknowledge(*acks)
