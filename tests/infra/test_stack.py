"""Synthesizes `PrmeStack` offline once (cdk-nag AwsSolutions included) and checks its properties."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from prme.backends.aws import resources
from prme.settings import Settings
from tests.stack_template import LOCAL_ACCOUNT, LocalBinding, StackTemplate, synthesize

if TYPE_CHECKING:
    from aws_cdk.assertions import Template

pytestmark = pytest.mark.slow  # one synth takes 10-20 s (jsii starts Node and loads the CDK)

ALARM_EMAIL = "ops@example.com"


@dataclass(frozen=True)
class Synth:
    template: Template
    resources: dict[str, dict[str, Any]]
    outdir: Path

    def of_type(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == cfn_type}


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synth]:
    root = tmp_path_factory.mktemp("infra")
    asset = root / "asset"
    (asset / "functions").mkdir(parents=True)
    (asset / "functions" / "__init__.py").write_text("")
    outdir = root / "cdk.out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
        # Imported here so the variable is set before jsii starts Node.
        from aws_cdk.assertions import Template

        from infra.app import build_app

        app, stack = build_app(
            {"prme:lambdaAsset": str(asset), "prme:alarmEmail": ALARM_EMAIL}, str(outdir)
        )
        app.synth()  # raises when cdk-nag reports an unacknowledged finding
        template = Template.from_stack(stack)
        yield Synth(template, template.to_json()["Resources"], outdir)


def _statements(node: Any) -> Iterator[dict[str, Any]]:
    """Every policy statement anywhere in the template (IAM policies, key and queue policies...)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Statement":
                yield from value if isinstance(value, list) else [value]
            else:
                yield from _statements(value)
    elif isinstance(node, list):
        for item in node:
            yield from _statements(item)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_table_has_pitr_encryption_ttl_and_is_retained(synth: Synth) -> None:
    (table,) = synth.of_type("AWS::DynamoDB::Table").values()
    props = table["Properties"]
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["TimeToLiveSpecification"] == {
        "AttributeName": resources.TTL_ATTRIBUTE,
        "Enabled": True,
    }
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert table["DeletionPolicy"] == "Retain"


def test_table_keys_and_gsis_match_the_resource_definition(synth: Synth) -> None:
    (table,) = synth.of_type("AWS::DynamoDB::Table").values()
    expected = resources.table_definition("unused")
    props = table["Properties"]
    assert props["KeySchema"] == expected["KeySchema"]
    indexes = {gsi["IndexName"]: gsi for gsi in props["GlobalSecondaryIndexes"]}
    assert set(indexes) == {gsi["IndexName"] for gsi in expected["GlobalSecondaryIndexes"]}
    assert {
        resources.OWNER_PENDING_INDEX,
        resources.PENDING_INDEX,
        resources.EXPIRING_INDEX,
    } <= set(indexes)
    for gsi in expected["GlobalSecondaryIndexes"]:
        assert indexes[gsi["IndexName"]]["KeySchema"] == gsi["KeySchema"]


def test_every_queue_has_its_dlq_with_the_spec_max_receive_count(synth: Synth) -> None:
    queues = synth.of_type("AWS::SQS::Queue")
    by_name = {q["Properties"]["QueueName"]: (logical_id, q) for logical_id, q in queues.items()}
    for spec in resources.queue_specs("prme").values():
        _, queue = by_name[spec.name]
        dlq_id, _ = by_name[spec.dead_letter_name]
        props = queue["Properties"]
        assert props["RedrivePolicy"] == {
            "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
            "maxReceiveCount": spec.max_receive_count,
        }
        assert props["VisibilityTimeout"] == spec.visibility_timeout_s
    for queue in queues.values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    enforced = [
        s
        for policy in synth.of_type("AWS::SQS::QueuePolicy").values()
        for s in _statements(policy)
        if s["Effect"] == "Deny"
        and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert len(enforced) == len(queues)


def test_alarms_cover_every_dlq_and_every_function(synth: Synth) -> None:
    alarms = list(synth.of_type("AWS::CloudWatch::Alarm").values())
    functions = synth.of_type("AWS::Lambda::Function")
    dlq_ids = {
        logical_id
        for logical_id, q in synth.of_type("AWS::SQS::Queue").items()
        if q["Properties"]["QueueName"].endswith("-dlq")
    }

    def watched(metric: str) -> set[str]:
        found = set()
        for alarm in alarms:
            props = alarm["Properties"]
            # A labelled metric is rendered as a one-element metric math list.
            stat = props["Metrics"][0]["MetricStat"]["Metric"] if "Metrics" in props else props
            if stat.get("MetricName") != metric:
                continue
            assert props["ComparisonOperator"] == "GreaterThanThreshold"
            assert props["Threshold"] == 0
            assert props["AlarmActions"]  # the SNS topic, since an e-mail was given
            for dimension in stat["Dimensions"]:
                value = dimension["Value"]
                found.add(value["Ref"] if "Ref" in value else value["Fn::GetAtt"][0])
        return found

    assert watched("ApproximateNumberOfMessagesVisible") == dlq_ids
    assert watched("Errors") == set(functions)
    assert watched("Throttles") == set(functions)
    assert len(synth.of_type("AWS::CloudWatch::Dashboard")) == 1
    (topic,) = synth.of_type("AWS::SNS::Topic").values()
    assert "KmsMasterKeyId" in topic["Properties"]


def test_function_environment_uses_only_settings_names(synth: Synth) -> None:
    allowed = {Settings.env_name(field) for field in Settings.model_fields} | {
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE",
        "POWERTOOLS_TRACER_CAPTURE_ERROR",
    }
    functions = synth.of_type("AWS::Lambda::Function").values()
    assert len(functions) == 4
    for function in functions:
        variables = function["Properties"]["Environment"]["Variables"]
        assert set(variables) <= allowed
        assert variables[Settings.env_name("backend")] == "aws"
        assert variables[Settings.env_name("opensearch_auth")] == "es"
        assert variables[Settings.env_name("embedder")] == "bedrock"


def test_functions_are_arm64_python312_traced_from_the_shared_factory(synth: Synth) -> None:
    handlers = set()
    for function in synth.of_type("AWS::Lambda::Function").values():
        props = function["Properties"]
        assert props["Architectures"] == ["arm64"]
        assert props["Runtime"] == "python3.12"
        assert props["TracingConfig"] == {"Mode": "Active"}
        handlers.add(props["Handler"])
    assert handlers == {
        "functions.api.handler",
        "functions.materializer.handler",
        "functions.ingest_consumer.handler",
        "functions.maintenance.handler",
    }


def test_sqs_consumers_report_partial_batch_failures(synth: Synth) -> None:
    mappings = synth.of_type("AWS::Lambda::EventSourceMapping").values()
    # materializer <- materialize and extract queues; ingest consumer <- ingest queue.
    assert len(mappings) == 3
    for mapping in mappings:
        props = mapping["Properties"]
        assert props["BatchSize"] == 10
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_no_policy_statement_allows_wildcard_actions(synth: Synth) -> None:
    wildcard = re.compile(r"^(\*|[a-z0-9-]+:\*)$")
    # Deny statements are exempt: enforceSSL denies `sqs:*`/`sns:*` without TLS on purpose.
    statements = [s for s in _statements(synth.resources) if s["Effect"] == "Allow"]
    assert statements
    for statement in statements:
        for action in _listed(statement.get("Action", [])):
            assert not wildcard.match(action), statement


def test_bedrock_grants_name_specific_foundation_models(stack_template: StackTemplate) -> None:
    for function in ("api", "materializer"):
        (statement,) = _model_statements(stack_template, function)
        assert sorted(statement["Resource"]) == [
            "arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0",
            "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
        ]


def test_bedrock_grants_follow_an_inference_profile_to_every_region_it_routes_to(
    tmp_path: Path,
) -> None:
    profile = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
    template = StackTemplate(synthesize(tmp_path, {"prme:extractionModelId": profile}))
    (statement,) = _model_statements(template, "materializer")
    assert sorted(statement["Resource"]) == [
        f"arn:aws:bedrock:us-east-1:{LOCAL_ACCOUNT}:inference-profile/{profile}",
        "arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0",
        *(
            f"arn:aws:bedrock:{region}::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"
            for region in ("us-east-1", "us-east-2", "us-west-1", "us-west-2")
        ),
    ]


def _model_statements(template: StackTemplate, function: str) -> list[dict[str, Any]]:
    binding = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200")
    return [
        s
        for s in template.role_statements(function, binding)
        if "bedrock:InvokeModel" in _listed(s["Action"])
    ]


def test_traces_hold_neither_responses_nor_errors(stack_template: StackTemplate) -> None:
    binding = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200")
    for function in stack_template.function_names():
        environment = stack_template.environment(function, binding)
        assert environment["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false", function
        assert environment["POWERTOOLS_TRACER_CAPTURE_ERROR"] == "false", function


def test_roles_hold_only_the_table_and_queue_actions_the_code_calls(
    stack_template: StackTemplate,
) -> None:
    binding = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200")
    table_arn = f"arn:aws:dynamodb:us-east-1:{LOCAL_ACCOUNT}:table/table"
    for function in stack_template.function_names():
        statements = stack_template.role_statements(function, binding)
        table = [s for s in statements if _listed(s["Resource"])[0].startswith(table_arn)]
        (grant,) = table
        assert sorted(_listed(grant["Action"])) == [
            "dynamodb:BatchGetItem",
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:Query",
            "dynamodb:UpdateItem",
        ], function
        assert _listed(grant["Resource"]) == [table_arn, f"{table_arn}/index/*"]
        # The backend resolves both work queues' URLs when it starts, in every function.
        for queue in ("materialize", "extract"):
            arn = f"arn:aws:sqs:us-east-1:{LOCAL_ACCOUNT}:prefix-{queue}"
            assert any(
                "sqs:GetQueueUrl" in _listed(s["Action"]) and arn in _listed(s["Resource"])
                for s in statements
            ), (function, queue)
        sends = [s for s in statements if "sqs:SendMessage" in _listed(s["Action"])]
        assert sends, function
        for send in sends:
            assert sorted(_listed(send["Action"])) == ["sqs:GetQueueUrl", "sqs:SendMessage"]
        # What Lambda's SQS poller needs, no more (no ChangeMessageVisibility, GetQueueUrl).
        for consume in [s for s in statements if "sqs:ReceiveMessage" in _listed(s["Action"])]:
            assert sorted(_listed(consume["Action"])) == [
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
                "sqs:ReceiveMessage",
            ]
        sqs_actions = {a for s in statements for a in _listed(s["Action"]) if a.startswith("sqs:")}
        assert sqs_actions <= {
            "sqs:SendMessage",
            "sqs:GetQueueUrl",
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
        }


def test_only_the_ingest_consumer_touches_the_ingest_queues(
    stack_template: StackTemplate,
) -> None:
    binding = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200")
    ingest_arn = f"arn:aws:sqs:us-east-1:{LOCAL_ACCOUNT}:prefix-ingest"
    for function in stack_template.function_names():
        resources = {
            r
            for s in stack_template.role_statements(function, binding)
            for r in _listed(s["Resource"])
        }
        touched = {r for r in resources if str(r).startswith(ingest_arn)}
        assert touched == ({ingest_arn, f"{ingest_arn}-dlq"} if function == "ingest" else set())


def test_ingest_consumer_may_park_messages_in_its_own_dlq(stack_template: StackTemplate) -> None:
    binding = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200")
    dlq = f"arn:aws:sqs:us-east-1:{LOCAL_ACCOUNT}:prefix-ingest-dlq"
    granted = {
        action
        for s in stack_template.role_statements("ingest", binding)
        if dlq in _listed(s["Resource"])
        for action in _listed(s["Action"])
    }
    assert granted == {"sqs:GetQueueUrl", "sqs:SendMessage"}


def test_search_domain_is_encrypted_and_https_only(synth: Synth) -> None:
    (domain,) = synth.of_type("AWS::OpenSearchService::Domain").values()
    props = domain["Properties"]
    assert props["EngineVersion"] == "OpenSearch_2.19"
    assert props["EncryptionAtRestOptions"] == {"Enabled": True}
    assert props["NodeToNodeEncryptionOptions"] == {"Enabled": True}
    assert props["DomainEndpointOptions"]["EnforceHTTPS"] is True
    assert props["DomainEndpointOptions"]["TLSSecurityPolicy"] == "Policy-Min-TLS-1-2-2019-07"
    assert props["ClusterConfig"]["InstanceType"] == "t3.small.search"
    assert props["ClusterConfig"]["InstanceCount"] == 1
    assert props["EBSOptions"]["VolumeSize"] == 10
    principals = props["AccessPolicies"]["Statement"][0]["Principal"]["AWS"]
    assert len(principals) == 2  # the api and materializer roles, nobody else


def test_http_api_stage_is_throttled_and_logged(synth: Synth) -> None:
    (stage,) = synth.of_type("AWS::ApiGatewayV2::Stage").values()
    props = stage["Properties"]
    assert props["StageName"] == "$default"
    assert props["DefaultRouteSettings"]["ThrottlingRateLimit"] == 50
    assert props["DefaultRouteSettings"]["ThrottlingBurstLimit"] == 100
    assert "DestinationArn" in props["AccessLogSettings"]
    (integration,) = synth.of_type("AWS::ApiGatewayV2::Integration").values()
    assert integration["Properties"]["PayloadFormatVersion"] == "2.0"


def test_outputs_name_the_endpoints(synth: Synth) -> None:
    outputs = synth.template.to_json()["Outputs"]
    assert {
        "ApiUrl",
        "TableName",
        "MaterializeQueueUrl",
        "ExtractQueueUrl",
        "IngestQueueUrl",
        "SearchDomainEndpoint",
    } <= set(outputs)


def test_cdk_nag_reports_no_unacknowledged_finding(synth: Synth) -> None:
    report = synth.outdir / "validation-report.json"
    if report.exists():
        for plugin in json.loads(report.read_text())["pluginReports"]:
            if plugin["pluginName"] == "AwsSolutions":
                assert plugin["violations"] == [], plugin["violations"]


def test_cdk_json_repeats_the_context_defaults() -> None:
    from infra.config import CONTEXT_DEFAULTS, REPO_ROOT

    cdk_json = json.loads((REPO_ROOT / "infra" / "cdk.json").read_text())
    assert cdk_json["context"] == CONTEXT_DEFAULTS


def test_api_function_outlasts_the_request_deadline(synth: Synth) -> None:
    """The deadline, not Lambda or API Gateway, must end a slow request: the api function's
    timeout covers the request budget plus the margin kept to answer, and stays within API
    Gateway's 30 s integration timeout (a later answer would be lost)."""
    # functions.limits, not functions.runtime: importing runtime builds Powertools' metrics
    # with this process's environment, and later Lambda tests would inherit them.
    from functions.limits import LAMBDA_MARGIN_MS

    (api,) = (
        f["Properties"]
        for f in synth.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "functions.api.handler"
    )
    budget_ms = Settings.model_fields["request_budget_ms"].default
    assert budget_ms + LAMBDA_MARGIN_MS <= api["Timeout"] * 1000 <= 30_000
