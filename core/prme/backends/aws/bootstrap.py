"""`prme bootstrap`: create the table, queues and index PRME needs; safe to run again."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from prme.backends.aws import resources
from prme.errors import SearchIndexMismatchError


def ensure_table(dynamodb: Any, table_name: str) -> bool:
    """Create the table (and turn on TTL) unless it exists. True when it was created."""
    try:
        dynamodb.describe_table(TableName=table_name)
        return False
    except dynamodb.exceptions.ResourceNotFoundException:
        pass
    try:
        dynamodb.create_table(**resources.table_definition(table_name))
    except dynamodb.exceptions.ResourceInUseException:
        return False
    dynamodb.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1})
    dynamodb.update_time_to_live(
        TableName=table_name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": resources.TTL_ATTRIBUTE},
    )
    return True


def ensure_queues(sqs: Any, prefix: str) -> dict[str, str]:
    """Create every work queue with its dead-letter queue and redrive; returns queue URLs."""
    urls: dict[str, str] = {}

    def create(name: str, attributes: dict[str, str] | None = None) -> str:
        try:
            url: str = sqs.create_queue(QueueName=name, Attributes=attributes or {})["QueueUrl"]
        except sqs.exceptions.QueueNameExists:
            # Created by the CDK stack with its own attributes: that queue is the right one.
            url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        return url

    for purpose, spec in resources.queue_specs(prefix).items():
        dlq_url = create(spec.dead_letter_name)
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        urls[purpose] = create(
            spec.name,
            {
                "VisibilityTimeout": str(spec.visibility_timeout_s),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(spec.max_receive_count)}
                ),
            },
        )
        urls[f"{purpose}-dlq"] = dlq_url
    return urls


def ensure_index(opensearch: Any, alias: str, dimension: int, *, replicas: int = 0) -> bool:
    """Create the versioned index behind `alias` unless the alias exists.

    An index that exists already gets the fields added to the mapping since it was created."""
    if opensearch.indices.exists_alias(name=alias):
        opensearch.indices.put_mapping(
            index=alias, body={"properties": resources.added_properties()}
        )
        return False
    if opensearch.indices.exists(index=alias):
        # A plain index under the alias's name (a write auto-created it before setup): the
        # alias cannot be added while it exists, and deleting it is the operator's decision.
        raise SearchIndexMismatchError(
            f"{alias} is a plain index, not an alias; delete it, then create the index again"
        )
    name = resources.index_name(alias)
    if not opensearch.indices.exists(index=name):
        opensearch.indices.create(
            index=name, body=resources.index_body(dimension, replicas=replicas)
        )
    opensearch.indices.put_alias(index=name, name=alias)
    return True


def bootstrap(
    *,
    dynamodb: Any,
    sqs: Any,
    opensearch: Any | None,
    table_name: str,
    queue_prefix: str,
    index_alias: str,
    dimension: int,
    replicas: int = 0,
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, str]:
    created = ensure_table(dynamodb, table_name)
    say(f"table {table_name}: {'created' if created else 'exists'}")
    urls = ensure_queues(sqs, queue_prefix)
    say(f"queues: {', '.join(sorted(urls))}")
    if opensearch is not None:
        made = ensure_index(opensearch, index_alias, dimension, replicas=replicas)
        say(f"index alias {index_alias}: {'created' if made else 'exists'}")
    return urls


def ensure_upload_bucket(s3: Any, bucket: str) -> bool:
    """Create the import uploads bucket as the stack does (private, encrypted by default,
    uploads expiring) unless it exists. True when it was created."""
    try:
        s3.head_bucket(Bucket=bucket)
        return False
    except s3.exceptions.ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code")) not in {"404", "NoSuchBucket"}:
            raise
    region = s3.meta.region_name
    location = (
        {}
        if region == "us-east-1"
        else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    )
    s3.create_bucket(Bucket=bucket, **location)
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    s3.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
    )
    s3.put_bucket_lifecycle_configuration(
        Bucket=bucket, LifecycleConfiguration=resources.upload_bucket_lifecycle()
    )
    return True
