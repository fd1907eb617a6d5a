"""docs/deployment.md walked step by step against the local AWS, reading its commands from the
page: "deploy" the synthesized template (table, queues, the index custom resource answered
through a caught ResponseURL), create a key with the page's exports and nothing else, then
store, retrieve and import through the handlers with real API Gateway v2 and SQS events.

Amazon Bedrock has no local emulator: a small HTTP stand-in answers InvokeModel (and refuses
Converse) at AWS_ENDPOINT_URL_BEDROCK_RUNTIME, so the real embedder code runs with the
dimension the stack names, and the index the stack made must accept its vectors.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest

from prme.backends.aws.opensearch_index import build_opensearch_client
from prme.embedding.hashing import HashingEmbedder
from tests.harness.aws import boto_client
from tests.harness.cloudformation import ResponseCatcher, cloudformation_request
from tests.harness.lambda_events import FakeLambdaContext, load_event
from tests.harness.stack_template import LocalBinding, StackTemplate

pytestmark = pytest.mark.slow  # the shared synth, a subprocess and five handlers

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "deployment.md"
WALK_BLOCK = re.compile(r"<!-- walk: ([\w-]+) -->\s*```bash\n(.*?)```", re.DOTALL)
API_URL = "https://abc123.execute-api.us-east-1.amazonaws.com"


def walk_steps() -> dict[str, list[str]]:
    """The page's walked command blocks by name: one command per line, comments dropped."""
    return {
        name: [line.strip() for line in block.splitlines() if line.strip()]
        for name, block in WALK_BLOCK.findall(DOC.read_text())
    }


# -- the deploy, as the template defines it ----------------------------------------------


def deploy_table(template: StackTemplate, binding: LocalBinding, dynamodb: Any) -> None:
    ((_, table),) = template.of_type("AWS::DynamoDB::Table").items()
    props = table["Properties"]
    dynamodb.create_table(
        TableName=binding.table_name,
        BillingMode=props["BillingMode"],
        KeySchema=props["KeySchema"],
        AttributeDefinitions=props["AttributeDefinitions"],
        GlobalSecondaryIndexes=props.get("GlobalSecondaryIndexes", []),
    )
    dynamodb.get_waiter("table_exists").wait(TableName=binding.table_name)
    ttl = props["TimeToLiveSpecification"]
    dynamodb.update_time_to_live(
        TableName=binding.table_name,
        TimeToLiveSpecification={"Enabled": ttl["Enabled"], "AttributeName": ttl["AttributeName"]},
    )


def deploy_queues(template: StackTemplate, binding: LocalBinding, sqs: Any) -> list[str]:
    queues = template.of_type("AWS::SQS::Queue")
    created: list[str] = []
    # Dead-letter queues first: a redrive policy names its target's ARN.
    for props in sorted(
        (q["Properties"] for q in queues.values()), key=lambda p: "RedrivePolicy" in p
    ):
        attributes = {
            key: str(props[key])
            for key in ("VisibilityTimeout", "MessageRetentionPeriod")
            if key in props
        }
        if "RedrivePolicy" in props:
            attributes["RedrivePolicy"] = json.dumps(
                template.resolve(props["RedrivePolicy"], binding)
            )
        name = template.resolve({"Fn::GetAtt": [_queue_id(queues, props), "QueueName"]}, binding)
        created.append(sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])
    return created


def _queue_id(queues: dict[str, dict[str, Any]], props: dict[str, Any]) -> str:
    (logical_id,) = [k for k, q in queues.items() if q["Properties"] is props]
    return logical_id


def deploy_index(
    template: StackTemplate,
    binding: LocalBinding,
    catcher: ResponseCatcher,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    from functions import index_setup

    (resource,) = template.of_type("Custom::PrmeSearchIndex").values()
    properties = template.resolve(resource["Properties"], binding)
    properties.pop("ServiceToken")
    # The deployed alias is the one the functions are given; here it is the test's own.
    deployed = template.function("api")["Properties"]["Environment"]["Variables"]
    assert properties["IndexAlias"] == deployed["PRME_OPENSEARCH_INDEX_ALIAS"]
    properties["IndexAlias"] = binding.index_alias
    as_function(template, "indexsetup", binding, monkeypatch)
    event = cloudformation_request("Create", catcher.url("index"), properties)
    index_setup.handler(event, cast(Any, FakeLambdaContext()))
    return catcher.caught[-1].body


def as_function(
    template: StackTemplate, name: str, binding: LocalBinding, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process becomes the named function: its deployed environment, fresh caches."""
    from functions import api, runtime

    for key, value in template.environment(name, binding).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    for cached in (runtime.settings, runtime.backend, api._adapter):
        if cached is runtime.backend and cached.cache_info().currsize:
            runtime.backend().close()
        cached.cache_clear()


# -- the page's commands, run ---------------------------------------------------------------


def exports(lines: list[str], placeholders: dict[str, str]) -> dict[str, str]:
    found = {}
    for line in lines:
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").partition("=")
            found[key] = fill(value, placeholders)
    return found


def fill(text: str, placeholders: dict[str, str]) -> str:
    for placeholder, value in placeholders.items():
        text = text.replace(placeholder, value)
    assert "<" not in text, f"unfilled placeholder in {text!r}"
    return text


def run_prme(line: str, environment: dict[str, str]) -> str:
    args = shlex.split(line, comments=True)
    assert args[0] == "prme"
    # Only what a person's shell holds: the page's exports and credentials for the account.
    clean = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "core"), str(REPO_ROOT)]),
        "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
        "AWS_ENDPOINT_URL": os.environ["AWS_ENDPOINT_URL"],
        **environment,
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from prme.cli import main; sys.exit(main())",
            *args[1:],
        ],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def call_api(line: str, placeholders: dict[str, str]) -> dict[str, Any]:
    """A `curl` line of the page as the API Gateway v2 event the api function receives."""
    from functions import api

    args = shlex.split(fill(line, placeholders))
    assert args[0] == "curl"
    url = next(arg for arg in args if arg.startswith("https://"))
    headers = {}
    for flag, value in itertools.pairwise(args):
        if flag == "-H":
            name, _, header = value.partition(":")
            headers[name.strip().lower()] = header.strip()
    body = args[args.index("-d") + 1]
    path = urlsplit(url).path
    event = load_event("apigw_v2_store.json")
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = "POST"
    event["headers"] = {**event["headers"], **headers}
    event["body"] = body
    response = api.handler(event, cast(Any, FakeLambdaContext()))
    assert response["statusCode"] in {200, 202}, response["body"]
    answer: dict[str, Any] = json.loads(response["body"])
    return answer


def deliver(sqs: Any, queue_url: str, handler: Any) -> int:
    """Receive what the queue holds and hand it to the function as its event source would."""
    received = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=1
    ).get("Messages", [])
    if not received:
        return 0
    shape = load_event("sqs_ingest_batch.json")["Records"][0]
    records = []
    for message in received:
        record = copy.deepcopy(shape)
        record.update(
            messageId=message["MessageId"],
            receiptHandle=message["ReceiptHandle"],
            body=message["Body"],
            md5OfBody=message["MD5OfBody"],
            awsRegion="us-east-1",
            eventSourceARN=sqs.get_queue_attributes(
                QueueUrl=queue_url, AttributeNames=["QueueArn"]
            )["Attributes"]["QueueArn"],
        )
        record["attributes"].update(
            {k: v for k, v in message["Attributes"].items() if k in record["attributes"]}
        )
        records.append(record)
    answer = handler({"Records": records}, FakeLambdaContext())
    assert answer == {"batchItemFailures": []}
    for message in received:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return len(received)


# -- Bedrock's stand-in -------------------------------------------------------------------------


@pytest.fixture
def bedrock_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            payload: dict[str, Any]
            headers: dict[str, str]
            if self.path.endswith("/invoke"):
                # Titan v2 answers in the dimensions asked for.
                embedder = HashingEmbedder(int(request["dimensions"]))
                vector = [float(x) for x in embedder.embed([request["inputText"]])[0]]
                status, payload, headers = 200, {"embedding": vector}, {}
            else:
                status, payload = 400, {"message": "not available in the walk"}
                headers = {"x-amzn-ErrorType": "ValidationException"}
            raw = json.dumps(payload).encode()
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", url)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


# -- the walk ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("bedrock_endpoint")
def test_the_deployment_page_walked_ends_in_retrievable_stores_and_imports(
    stack_template: StackTemplate,
    aws_endpoint: str,
    opensearch_url: str,
    response_catcher: ResponseCatcher,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Powertools reads its metrics namespace when `functions.runtime` is first imported.
    namespace = stack_template.function("api")["Properties"]["Environment"]["Variables"][
        "POWERTOOLS_METRICS_NAMESPACE"
    ]
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", namespace)
    from functions import ingest_consumer, materializer, runtime

    steps = walk_steps()
    assert set(steps) == {"keys", "store", "retrieve", "import", "retrieve-import"}
    suffix = uuid.uuid4().hex[:10]
    binding = LocalBinding(
        table_name=f"prme-walk-{suffix}",
        queue_prefix=f"prme-walk-{suffix}",
        index_alias=f"prme-walk-{suffix}",
        opensearch_url=opensearch_url,
    )
    dynamodb, sqs = boto_client("dynamodb", aws_endpoint), boto_client("sqs", aws_endpoint)
    opensearch = build_opensearch_client(opensearch_url, auth="none", region=None)
    try:
        # Deploy: the template's table and queues, then the index custom resource.
        deploy_table(stack_template, binding, dynamodb)
        deploy_queues(stack_template, binding, sqs)
        answer = deploy_index(stack_template, binding, response_catcher, monkeypatch)
        assert answer["Status"] == "SUCCESS", answer["Reason"]

        outputs = {
            key: str(stack_template.resolve(output["Value"], binding))
            for key, output in stack_template.template["Outputs"].items()
            if key != "ApiUrl"  # the handler is called directly; only the path is used
        }
        placeholders = {f"<{key} output>": value for key, value in outputs.items()}
        placeholders |= {"<ApiUrl output>": API_URL, "<region>": binding.region}

        # The first key, with the page's exports and nothing else.
        environment = exports(steps["keys"], placeholders)
        (command,) = [line for line in steps["keys"] if line.startswith("prme ")]
        printed = run_prme(command, environment)
        placeholders["<api_key>"] = re.findall(r"^api_key: (\S+)$", printed, re.MULTILINE)[0]

        # Store and retrieve through the api function, as API Gateway calls it.
        as_function(stack_template, "api", binding, monkeypatch)
        (store,) = steps["store"]
        stored = call_api(store, placeholders)
        assert stored["processing_status"] == "completed"
        opensearch.indices.refresh(index=binding.index_alias)  # the refresh the page mentions
        (retrieve,) = steps["retrieve"]
        assert "I moved to Lisbon in May." in json.dumps(call_api(retrieve, placeholders))

        # Import through the api and the ingest queue; the materializer indexes what it
        # announces.
        (submit,) = steps["import"]
        assert call_api(submit, placeholders)["chunks_total"] == 1
        as_function(stack_template, "ingest", binding, monkeypatch)
        assert deliver(sqs, outputs["IngestQueueUrl"], ingest_consumer.handler) == 1
        as_function(stack_template, "materializer", binding, monkeypatch)
        while deliver(sqs, outputs["MaterializeQueueUrl"], materializer.handler):
            pass
        opensearch.indices.refresh(index=binding.index_alias)
        as_function(stack_template, "api", binding, monkeypatch)
        (retrieve_import,) = steps["retrieve-import"]
        assert "I adopted a greyhound called Juno." in json.dumps(
            call_api(retrieve_import, placeholders)
        )
    finally:
        runtime.backend.cache_clear()
        runtime.settings.cache_clear()
        opensearch.indices.delete(index=f"{binding.index_alias}*", ignore_unavailable=True)
        opensearch.close()
        dynamodb.delete_table(TableName=binding.table_name)
        for url in sqs.list_queues(QueueNamePrefix=binding.queue_prefix).get("QueueUrls", []):
            sqs.delete_queue(QueueUrl=url)
