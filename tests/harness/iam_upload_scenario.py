"""An import by upload run under the functions' roles on IAM-enforcing moto: the api opens the
upload, reads and splits the file (HeadObject, ranged GetObject), sends its chunks and deletes
it; the ingest consumer commits them from the messages alone; a role without the grant cannot
read uploads. The caller's PUT itself is made with the harness's own key: moto's IAM check fails
on presigned requests (an internal error), and on S3 a presigned PUT is authorized as the role
that signed it, the api's, whose PutObject grant tests/infra checks."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from prme.model.uploads import upload_object_key
from tests.harness.iam import IamDeployment
from tests.harness.iam_scenarios import RunAs, drain
from tests.harness.lambda_events import ALICE, FakeLambdaContext, sqs_records

UPLOADED = (
    b"".join(json.dumps({"content": f"uploaded note {i}"}).encode() + b"\n" for i in range(60))
    + b"not json\n"
)


def upload_split_and_commit(deployment: IamDeployment, run_as: RunAs) -> None:
    from functions import ingest_consumer, runtime
    from prme.engine.import_uploads import open_upload_import, start_upload_import
    from prme.model.uploads import UploadRequest

    run_as("api")
    deps = runtime.backend().engine.deps
    job, target = open_upload_import(deps, ALICE, UploadRequest(size_bytes=len(UPLOADED)))
    assert target.size_bytes == len(UPLOADED)
    s3 = deployment.admin("s3")
    key = upload_object_key(ALICE, job.import_id)
    s3.put_object(Bucket=deployment.binding.upload_bucket, Key=key, Body=UPLOADED)
    started = start_upload_import(deps, ALICE, job.import_id)
    assert (started.item_count, started.items_failed, len(started.chunks)) == (61, 1, 2)
    chunks = drain(deployment, "ingest")
    assert len(chunks) == 2

    run_as("ingest")
    event = sqs_records("sqs_ingest_batch.json", chunks)
    assert ingest_consumer.handler(event, FakeLambdaContext()) == {"batchItemFailures": []}
    done = runtime.backend().engine.get_import(ALICE, job.import_id)
    assert (done.status.value, done.items_accepted) == ("completed_with_errors", 60)
    # The consumer's role has no grant on the bucket: IAM refuses it the uploads.
    with pytest.raises(ClientError, match=r"403|AccessDenied|Forbidden"):
        boto3.client("s3").head_object(Bucket=deployment.binding.upload_bucket, Key=key)
    assert s3.list_objects_v2(Bucket=deployment.binding.upload_bucket).get("KeyCount", 0) == 0
