"""The bucket large imports are uploaded to: private, TLS only, encrypted, emptied by lifecycle."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.components.checkov_skips import skip
from prme.backends.aws import resources
from prme.model.uploads import UPLOAD_PREFIX
from prme.settings import Settings

# What the api does with uploads: it presigns the caller's PUT (S3 authorizes a presigned
# request as the role that signed it), reads the file when its import starts (HeadObject and
# ranged GetObject, both authorized as GetObject), and deletes it once its chunks are sent.
# No other function touches uploads: the chunk messages carry the items.
API_ACTIONS = ("s3:PutObject", "s3:GetObject", "s3:DeleteObject")


class Uploads(Construct):
    """One bucket; objects live under `imports/` only, for `UPLOAD_RETENTION_DAYS` at most."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            versioned=False,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-import-uploads",
                    prefix=UPLOAD_PREFIX,
                    expiration=Duration.days(resources.UPLOAD_RETENTION_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(
                        resources.UPLOAD_ABORT_INCOMPLETE_DAYS
                    ),
                )
            ],
            # Whatever is left expires within days; deleting the stack must not fail on it
            # nor deploy a function to empty the bucket first.
            removal_policy=RemovalPolicy.RETAIN,
        )
        self._acknowledge()

    def grant_api(self, function: lambda_.Function) -> None:
        self._grant(function, API_ACTIONS)

    def _grant(self, function: lambda_.Function, actions: tuple[str, ...]) -> None:
        function.add_environment(Settings.env_name("upload_bucket"), self.bucket.bucket_name)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=list(actions), resources=[self.bucket.arn_for_objects(f"{UPLOAD_PREFIX}*")]
            )
        )
        # Without ListBucket, S3 answers a missing object with 403 instead of 404, and an
        # import whose upload never came would read as the store failing.
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn])
        )
        Validations.of(function.role or function).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{self._logical_id()}.Arn>/{UPLOAD_PREFIX}*]",
                reason="Every import's upload has its own key under the uploads prefix of this "
                "one bucket; the wildcard covers only that prefix.",
            )
        )

    def _logical_id(self) -> str:
        from aws_cdk import Stack

        stack = Stack.of(self)
        cfn = self.bucket.node.default_child
        return str(stack.resolve(stack.get_logical_id(cfn)))  # type: ignore[arg-type]

    def _acknowledge(self) -> None:
        reason_logs = (
            "Uploads are short-lived caller files read once by the service; each PUT is "
            "authorized by a presigned URL the api logs issuing, and reads and deletes are the "
            "functions' own, logged by them. Server access logs would need a second bucket "
            "holding the callers' request details for longer than the uploads themselves."
        )
        Validations.of(self.bucket).acknowledge(
            Acknowledgment(id="AwsSolutions-S1", reason=reason_logs)
        )
        skip(self.bucket, "CKV_AWS_18", reason_logs)
        skip(
            self.bucket,
            "CKV_AWS_21",
            "No versioning: an upload is written once per import, read within minutes and "
            "deleted when its import completes; old versions would keep callers' files past "
            "their deletion, and the ledger, not this bucket, is the record of what was imported.",
        )
