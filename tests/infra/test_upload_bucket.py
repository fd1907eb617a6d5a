"""The import uploads bucket in the synthesized stack: private, TLS only, encrypted, emptied by
its lifecycle, and reachable only by the functions that presign or read uploads."""

from __future__ import annotations

from typing import Any

import pytest

from infra.components.uploads import API_ACTIONS
from prme.backends.aws import resources
from prme.model.uploads import UPLOAD_PREFIX
from tests.harness.stack_template import LocalBinding, StackTemplate

pytestmark = pytest.mark.slow  # the shared synth

BINDING = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200", upload_bucket="up")
BUCKET_ARN = "arn:aws:s3:::up"
# The functions that reach uploads, and what each may do under the uploads prefix: only the
# api, which presigns, splits and deletes (chunk messages carry the items to the consumer).
GRANTS = {"api": sorted(API_ACTIONS)}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _bucket(stack_template: StackTemplate) -> dict[str, Any]:
    (bucket,) = stack_template.of_type("AWS::S3::Bucket").values()
    return bucket


def test_the_bucket_is_private_encrypted_and_unversioned(stack_template: StackTemplate) -> None:
    bucket = _bucket(stack_template)
    props = bucket["Properties"]
    assert set(props["PublicAccessBlockConfiguration"].values()) == {True}
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert props["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert "VersioningConfiguration" not in props
    assert bucket["DeletionPolicy"] == "Retain"


def test_the_lifecycle_is_the_one_bootstrap_gives_the_local_bucket(
    stack_template: StackTemplate,
) -> None:
    (rule,) = _bucket(stack_template)["Properties"]["LifecycleConfiguration"]["Rules"]
    (local,) = resources.upload_bucket_lifecycle()["Rules"]
    assert rule["Status"] == local["Status"] == "Enabled"
    assert rule["Prefix"] == local["Filter"]["Prefix"] == UPLOAD_PREFIX
    assert rule["ExpirationInDays"] == local["Expiration"]["Days"] <= 2
    abort = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
    assert abort == local["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]


def test_the_bucket_refuses_every_request_without_tls(stack_template: StackTemplate) -> None:
    (policy,) = stack_template.of_type("AWS::S3::BucketPolicy").values()
    statements = stack_template.resolve(policy["Properties"]["PolicyDocument"], BINDING)
    (deny,) = [s for s in statements["Statement"] if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert sorted(deny["Resource"]) == [BUCKET_ARN, f"{BUCKET_ARN}/*"]


def test_only_the_api_reaches_uploads_and_only_under_the_prefix(
    stack_template: StackTemplate,
) -> None:
    granted: dict[str, dict[str, list[str]]] = {}
    for function in stack_template.function_names():
        for statement in stack_template.role_statements(function, BINDING):
            actions = [a for a in _listed(statement["Action"]) if a.startswith("s3:")]
            if actions:
                for resource in _listed(statement["Resource"]):
                    granted.setdefault(function, {})[resource] = sorted(actions)
    assert granted == {
        name: {f"{BUCKET_ARN}/{UPLOAD_PREFIX}*": actions, BUCKET_ARN: ["s3:ListBucket"]}
        for name, actions in GRANTS.items()
    }


def test_the_functions_that_reach_uploads_are_told_the_bucket(
    stack_template: StackTemplate,
) -> None:
    for function in stack_template.function_names():
        variables = stack_template.environment(function, BINDING)
        expected = "up" if function in GRANTS else None
        assert variables.get("PRME_UPLOAD_BUCKET") == expected, function
