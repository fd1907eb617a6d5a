"""The checkov findings this stack accepts, each in the resource's Metadata with its reason.

`skip` marks one resource. `SkipsByKind`, added once to the stack, marks every resource of a
CloudFormation type for which the same reason holds, so resources added later are covered too.
`grep -rn "CKV_AWS_" infra` lists every skip; tests/infra/test_template_checks.py runs checkov.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import CfnResource, IAspect
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct


def skip(construct: IConstruct, check_id: str, reason: str) -> None:
    """Tell checkov to skip `check_id` on the construct's CloudFormation resource, and why."""
    if not reason.strip():
        raise ValueError(f"checkov skip {check_id} on {construct.node.path} needs a reason")
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource to mark")
    existing: dict[str, Any] = resource.get_metadata("checkov") or {}
    entries: list[dict[str, str]] = list(existing.get("skip", []))
    for entry in entries:
        if entry["id"] == check_id and entry["comment"] == reason:
            return  # the same skip again (an aspect visiting on a second synth)
        if entry["id"] == check_id:
            raise ValueError(f"checkov skip {check_id} on {construct.node.path}: two reasons")
    entries.append({"id": check_id, "comment": reason})
    resource.add_metadata("checkov", {**existing, "skip": entries})


@dataclass(frozen=True)
class KindSkip:
    check_id: str
    reason: str
    # Only resources this accepts are skipped, so a reason that depends on a property holds.
    applies: Callable[[CfnResource], bool] = lambda _resource: True


def _sqs_managed_encryption(resource: CfnResource) -> bool:
    return isinstance(resource, sqs.CfnQueue) and resource.sqs_managed_sse_enabled is True


# A new kind of trigger (or a function that keeps secrets in its environment) must be checked
# against these reasons before it relies on them.
SKIPS_BY_KIND: dict[str, tuple[KindSkip, ...]] = {
    "AWS::Lambda::Function": (
        KindSkip(
            "CKV_AWS_116",
            "A function dead-letter queue only catches failed asynchronous invocations. The api "
            "is invoked synchronously by API Gateway (the caller gets the error); queue consumers "
            "run from SQS event source mappings, whose failed messages go to each queue's own "
            "redrive DLQ; the maintenance sweep is re-run by its schedule every few minutes; "
            "a deploy-time handler that fails fails the deployment.",
        ),
        KindSkip(
            "CKV_AWS_117",
            "The functions run outside a VPC by design: they call only AWS endpoints (DynamoDB, "
            "SQS, Bedrock, CloudWatch, X-Ray and the OpenSearch domain over TLS with SigV4), "
            "which IAM already scopes; a VPC would add NAT or interface-endpoint cost and "
            "cold-start latency without narrowing what they can reach.",
        ),
        KindSkip(
            "CKV_AWS_173",
            "The environment holds resource names, endpoints, model ids and Powertools "
            "settings, no secrets (API keys live hashed in the table); Lambda encrypts it at "
            "rest with its AWS managed key, so a customer managed key would protect nothing "
            "secret.",
        ),
    ),
    "AWS::Logs::LogGroup": (
        KindSkip(
            "CKV_AWS_158",
            "CloudWatch Logs encrypts every log group at rest with its own service keys and read "
            "access is granted by IAM on the log group. A customer managed key (a separate say "
            "over who can decrypt, for a key and a key policy admitting the logs service per "
            "deployment) is not used yet.",
        ),
    ),
    "AWS::SQS::Queue": (
        KindSkip(
            "CKV_AWS_27",
            "Encrypted at rest with SQS-managed keys (SqsManagedSseEnabled is true in the "
            "template); this check recognizes only KmsMasterKeyId. KMS encryption would add KMS "
            "requests per data-key refresh and, with a customer managed key, key grants for "
            "every producer and consumer.",
            _sqs_managed_encryption,
        ),
    ),
}


@jsii.implements(IAspect)
class SkipsByKind:
    """Writes `SKIPS_BY_KIND` into every matching resource of the scope it is added to."""

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, CfnResource):
            return
        for rule in SKIPS_BY_KIND.get(node.cfn_resource_type, ()):
            if rule.applies(node):
                skip(node, rule.check_id, rule.reason)
