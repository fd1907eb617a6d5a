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
from prme.model.input_policy import LAMBDA_MAX_BODY_BYTES, LAMBDA_PAYLOAD_BYTES
from prme.settings import Settings
from tests.harness.stack_template import LOCAL_ACCOUNT, LocalBinding, StackTemplate, synthesize

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


def _synthesize(root: Path, context: dict[str, Any]) -> Iterator[Synth]:
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
            {"prme:lambdaAsset": str(asset), "prme:alarmEmail": ALARM_EMAIL, **context},
            str(outdir),
        )
        app.synth()  # raises when cdk-nag reports an unacknowledged finding
        template = Template.from_stack(stack)
        yield Synth(template, template.to_json()["Resources"], outdir)


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synth]:
    yield from _synthesize(tmp_path_factory.mktemp("infra"), {})


# The production profile with one explicit override, which must win over the profile.
PRODUCTION_VOLUME_GB = 200


@pytest.fixture(scope="session")
def production_synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synth]:
    yield from _synthesize(
        tmp_path_factory.mktemp("infra-production"),
        {"prme:profile": "production", "prme:searchVolumeGb": PRODUCTION_VOLUME_GB},
    )


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
            stat = (
                props["Metrics"][0].get("MetricStat", {}).get("Metric", {})
                if "Metrics" in props
                else props
            )
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
    allowed = Settings.env_names() | {
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE",
        "POWERTOOLS_TRACER_CAPTURE_ERROR",
    }
    functions = synth.of_type("AWS::Lambda::Function").values()
    assert len(functions) == 6  # api, materializer, extractor, ingest, maintenance, indexsetup
    # Groups are read by nested names below their own (the default tenant limits).
    limits = Settings.env_name("limits") + "__"
    for function in functions:
        variables = function["Properties"]["Environment"]["Variables"]
        assert {v for v in variables if not v.startswith(limits)} <= allowed
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
        "functions.extractor.handler",
        "functions.ingest_consumer.handler",
        "functions.maintenance.handler",
        "functions.index_setup.handler",
    }


@dataclass(frozen=True)
class Mapping:
    """An SQS event source mapping with the queue it reads and the function it invokes."""

    props: dict[str, Any]
    queue: dict[str, Any]
    function: dict[str, Any]


def _mappings(synth: Synth) -> list[Mapping]:
    found = []
    for mapping in synth.of_type("AWS::Lambda::EventSourceMapping").values():
        props = mapping["Properties"]
        queue_id = props["EventSourceArn"]["Fn::GetAtt"][0]
        function_id = props["FunctionName"]["Ref"]
        found.append(
            Mapping(
                props,
                synth.resources[queue_id]["Properties"],
                synth.resources[function_id]["Properties"],
            )
        )
    return found


def test_each_queue_has_one_consumer_and_extraction_its_own_function(synth: Synth) -> None:
    consumed = {(m.function["Handler"], m.queue["QueueName"]) for m in _mappings(synth)}
    assert consumed == {
        ("functions.materializer.handler", "prme-materialize"),
        ("functions.extractor.handler", "prme-extract"),
        ("functions.ingest_consumer.handler", "prme-ingest"),
    }


def test_sqs_mappings_fit_their_functions_and_report_partial_batch_failures(
    synth: Synth,
) -> None:
    """Read from the template alone: AWS's advice of a visibility of at least six times the
    function's timeout, and a mapping that never starts more batches than its function may
    run (a throttled batch spends a receive on the way to the DLQ)."""
    mappings = _mappings(synth)
    assert len(mappings) == 3
    for mapping in mappings:
        props, function = mapping.props, mapping.function
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert mapping.queue["VisibilityTimeout"] >= 6 * function["Timeout"]
        concurrency = props["ScalingConfig"]["MaximumConcurrency"]
        assert 2 <= concurrency <= function.get("ReservedConcurrentExecutions", 1000)
    extract = next(m for m in mappings if m.queue["QueueName"] == "prme-extract")
    # One Converse call per invocation: a receive is always one real attempt.
    assert extract.props["BatchSize"] == 1


def test_extraction_client_gives_up_before_the_extractor_function_times_out(
    synth: Synth,
) -> None:
    from functions.limits import LAMBDA_MARGIN_MS
    from prme import composition
    from prme.backends.aws.deadline_clients import worst_case_s

    (extractor,) = (
        f["Properties"]
        for f in synth.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "functions.extractor.handler"
    )
    converse_worst = worst_case_s(
        composition.EXTRACTION_CONNECT_TIMEOUT_S,
        composition.EXTRACTION_READ_TIMEOUT_S,
        composition.EXTRACTION_ATTEMPTS,
    )
    # A hung model still leaves a quarter of the time to embed, index and commit.
    assert converse_worst + LAMBDA_MARGIN_MS / 1000 <= 0.75 * extractor["Timeout"]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"prme:extractorMaxConcurrency": 6}, "exceeds prme:extractorReservedConcurrency (4)"),
        ({"prme:ingestReservedConcurrency": 1}, "exceeds prme:ingestReservedConcurrency (1)"),
        ({"prme:materializerMaxConcurrency": 1}, "must be from 2 to 1000"),
    ],
)
def test_config_refuses_a_mapping_above_its_reserved_concurrency(
    synth: Synth, context: dict[str, Any], message: str
) -> None:
    from aws_cdk import App

    from infra.config import ContextError, DeploymentConfig

    with pytest.raises(ContextError, match=re.escape(message)):
        DeploymentConfig.from_context(App(context=context).node)
    # Without a reservation any concurrency Lambda accepts will do.
    unreserved = {**context, "prme:extractorReservedConcurrency": "none"}
    unreserved["prme:ingestReservedConcurrency"] = "none"
    if "prme:materializerMaxConcurrency" not in context:
        DeploymentConfig.from_context(App(context=unreserved).node)


def test_no_policy_statement_allows_wildcard_actions(synth: Synth) -> None:
    wildcard = re.compile(r"^(\*|[a-z0-9-]+:\*)$")
    # Deny statements are exempt: enforceSSL denies `sqs:*`/`sns:*` without TLS on purpose.
    statements = [s for s in _statements(synth.resources) if s["Effect"] == "Allow"]
    assert statements
    for statement in statements:
        for action in _listed(statement.get("Action", [])):
            assert not wildcard.match(action), statement


def test_bedrock_grants_name_specific_foundation_models(stack_template: StackTemplate) -> None:
    embedding = "arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0"
    extraction = (
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0"
    )
    for function, expected in (
        ("api", [embedding, extraction]),
        ("extractor", [embedding, extraction]),
        ("materializer", [embedding]),
    ):
        (statement,) = _model_statements(stack_template, function)
        assert sorted(_listed(statement["Resource"])) == expected, function


def test_bedrock_grants_follow_an_inference_profile_to_every_region_it_routes_to(
    tmp_path: Path,
) -> None:
    profile = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
    template = StackTemplate(synthesize(tmp_path, {"prme:extractionModelId": profile}))
    (statement,) = _model_statements(template, "extractor")
    assert sorted(_listed(statement["Resource"])) == [
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


# The DynamoDB actions each function's code calls (benchmarks/iam_removal.py shows each one
# needed by an IAM-enforced scenario), and the queues it announces work on.
_EVERY_LEDGER_CALL = ["BatchGetItem", "GetItem", "PutItem", "Query", "UpdateItem"]
TABLE_CALLS = {
    # Deleting one memory is a transaction of Deletes.
    "api": sorted([*_EVERY_LEDGER_CALL, "DeleteItem"]),
    "materializer": _EVERY_LEDGER_CALL,
    # No batched node read: an extraction's nodes are never another's session predecessor.
    "extractor": ["GetItem", "PutItem", "Query", "UpdateItem"],
    # GetItem: the owner's erasure record, read before an import is saved.
    "ingest": ["BatchGetItem", "GetItem", "PutItem"],
    # Queries, and the Put and Update writes of archiving, sweeping and alias scans; the
    # organizer lists owners and tenants (Scan) and reads a duplicate with its keeper.
    "maintenance": ["BatchGetItem", "PutItem", "Query", "Scan", "UpdateItem"],
}
# Workers announce nothing: a failed write leaves the work pending for redelivery and sweeps.
SENDS_TO = {
    "api": ["materialize", "extract", "ingest"],
    "materializer": [],
    "extractor": [],
    "ingest": ["materialize", "ingest-dlq"],
    "maintenance": ["materialize", "extract"],
}


def test_roles_hold_only_the_table_and_queue_actions_the_code_calls(
    stack_template: StackTemplate,
) -> None:
    binding = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200")
    table_arn = f"arn:aws:dynamodb:us-east-1:{LOCAL_ACCOUNT}:table/table"
    for function in stack_template.function_names():
        statements = stack_template.role_statements(function, binding)
        if function == "indexsetup":
            # Runs at deploy time against the search domain only.
            granted = {a for s in statements for a in _listed(s["Action"])}
            assert not {a for a in granted if a.startswith(("dynamodb:", "sqs:"))}
            continue
        table = [s for s in statements if _listed(s["Resource"])[0].startswith(table_arn)]
        (grant,) = table
        expected = TABLE_CALLS[function]
        assert sorted(_listed(grant["Action"])) == [f"dynamodb:{a}" for a in expected], function
        assert _listed(grant["Resource"]) == [table_arn, f"{table_arn}/index/*"]
        # The backend resolves both work queues' URLs when it starts, in every function.
        for queue in ("materialize", "extract"):
            arn = f"arn:aws:sqs:us-east-1:{LOCAL_ACCOUNT}:prefix-{queue}"
            assert any(
                "sqs:GetQueueUrl" in _listed(s["Action"]) and arn in _listed(s["Resource"])
                for s in statements
            ), (function, queue)
        sends = [s for s in statements if "sqs:SendMessage" in _listed(s["Action"])]
        for send in sends:
            assert _listed(send["Action"]) == ["sqs:SendMessage"]
        sent_to = {r.rsplit(":", 1)[-1] for s in sends for r in _listed(s["Resource"])}
        assert sent_to == {f"prefix-{q}" for q in SENDS_TO[function]}, function
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


def test_only_the_api_and_the_ingest_consumer_touch_the_ingest_queues(
    stack_template: StackTemplate,
) -> None:
    binding = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200")
    ingest_arn = f"arn:aws:sqs:us-east-1:{LOCAL_ACCOUNT}:prefix-ingest"
    # The api sends import chunks to the ingest queue (never its DLQ); the consumer reads it.
    expected = {"ingest": {ingest_arn, f"{ingest_arn}-dlq"}, "api": {ingest_arn}}
    for function in stack_template.function_names():
        resources = {
            r
            for s in stack_template.role_statements(function, binding)
            for r in _listed(s["Resource"])
        }
        touched = {r for r in resources if str(r).startswith(ingest_arn)}
        assert touched == expected.get(function, set()), function


def test_functions_may_only_read_and_post_to_the_search_domain(
    stack_template: StackTemplate,
) -> None:
    """Functions POST `_bulk` and `_msearch` and GET the index they check; only the index
    setup function may create (PUT) or look up (HEAD) an index."""
    binding = LocalBinding("table", "prefix", "alias", "http://127.0.0.1:9200")
    searching = {}
    for function in stack_template.function_names():
        for statement in stack_template.role_statements(function, binding):
            actions = _listed(statement["Action"])
            if any(a.startswith("es:") for a in actions):
                searching[function] = sorted(actions)
    runtime = ["es:ESHttpGet", "es:ESHttpPost"]
    assert searching == {
        "api": runtime,
        "materializer": runtime,
        "extractor": runtime,
        "indexsetup": ["es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPut"],
    }
    # The domain's access policy (which alone would allow, in the same account) agrees.
    (domain,) = stack_template.of_type("AWS::OpenSearchService::Domain").values()
    access = domain["Properties"]["AccessPolicies"]["Statement"]
    assert sorted(sorted(s["Action"]) for s in access) == sorted([runtime, searching["indexsetup"]])


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
    assert len(principals) == 3  # the api, materializer and extractor roles, nobody else


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


def test_deployment_guide_lists_every_context_parameter_with_its_default() -> None:
    from infra.config import CONTEXT_DEFAULTS, REPO_ROOT

    guide = (REPO_ROOT / "docs" / "deployment.md").read_text()
    # Rows of the three-column parameter table; the profile table's rows have four cells.
    rows = dict(re.findall(r"^\| `(prme:\w+)` \| ([^|]*) \| [^|]* \|$", guide, flags=re.MULTILINE))
    assert set(rows) == set(CONTEXT_DEFAULTS)
    for key, default in CONTEXT_DEFAULTS.items():
        assert rows[key].strip() == (f"`{default}`" if default != "" else "empty"), key


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


# -- alarms beyond dead letters and function errors; profiles ---------------------------


@dataclass(frozen=True)
class AlarmSpec:
    namespace: str
    metric: str
    statistic: str
    threshold: float
    comparison: str
    dimensions: dict[str, Any]
    has_action: bool


def _alarm_specs(synth: Synth) -> list[AlarmSpec]:
    specs = []
    for alarm in synth.of_type("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        # A labelled metric is rendered as a one-element metric math list; an alarm on an
        # expression over several metrics (SearchIndexRefused) is checked by its own test.
        if "Metrics" in props and "MetricStat" not in props["Metrics"][0]:
            continue
        if "Metrics" in props:
            stat = props["Metrics"][0]["MetricStat"]
            metric, statistic = stat["Metric"], stat["Stat"]
        else:
            metric = props
            statistic = props.get("Statistic") or props["ExtendedStatistic"]
        specs.append(
            AlarmSpec(
                namespace=metric["Namespace"],
                metric=metric["MetricName"],
                statistic=statistic,
                threshold=props["Threshold"],
                comparison=props["ComparisonOperator"],
                dimensions={d["Name"]: d["Value"] for d in metric.get("Dimensions", [])},
                has_action=bool(props.get("AlarmActions")),
            )
        )
    return specs


def _only(specs: list[AlarmSpec], namespace: str, metric: str) -> list[AlarmSpec]:
    found = [s for s in specs if s.namespace == namespace and s.metric == metric]
    assert found, f"no alarm on {namespace} {metric}"
    return found


def _ref(value: Any) -> str:
    return str(value["Ref"] if "Ref" in value else value["Fn::GetAtt"][0])


def test_api_alarms_watch_5xx_and_p99_latency_of_the_stage(synth: Synth) -> None:
    from infra.config import CONTEXT_DEFAULTS

    specs = _alarm_specs(synth)
    (api_id,) = synth.of_type("AWS::ApiGatewayV2::Api")
    (errors,) = _only(specs, "AWS/ApiGateway", "5xx")
    (latency,) = _only(specs, "AWS/ApiGateway", "Latency")
    for alarm in (errors, latency):
        assert _ref(alarm.dimensions["ApiId"]) == api_id
        assert alarm.dimensions["Stage"] == "$default"
        assert alarm.comparison == "GreaterThanThreshold"
    assert (errors.statistic, errors.threshold) == (
        "Sum",
        CONTEXT_DEFAULTS["prme:alarmApiServerErrors"],
    )
    assert (latency.statistic, latency.threshold) == (
        "p99",
        CONTEXT_DEFAULTS["prme:alarmApiP99LatencyMs"],
    )


def test_every_work_queue_has_an_oldest_message_alarm(synth: Synth) -> None:
    from infra.config import CONTEXT_DEFAULTS

    work_queue_ids = {
        logical_id
        for logical_id, q in synth.of_type("AWS::SQS::Queue").items()
        if not q["Properties"]["QueueName"].endswith("-dlq")
    }
    ages = _only(_alarm_specs(synth), "AWS/SQS", "ApproximateAgeOfOldestMessage")
    assert {_ref(a.dimensions["QueueName"]) for a in ages} == work_queue_ids
    for alarm in ages:
        assert alarm.threshold == CONTEXT_DEFAULTS["prme:alarmQueueAgeSeconds"]
        assert alarm.comparison == "GreaterThanThreshold"


def test_search_domain_alarms_on_health_storage_memory_and_credits(synth: Synth) -> None:
    from infra.components import monitoring

    specs = _alarm_specs(synth)
    (domain_id,) = synth.of_type("AWS::OpenSearchService::Domain")
    expected = {
        "ClusterStatus.red": (1, "GreaterThanOrEqualToThreshold"),
        "ClusterStatus.yellow": (1, "GreaterThanOrEqualToThreshold"),
        # A quarter of the default 10 GiB volume, in MiB (the metric's unit).
        "FreeStorageSpace": (2560, "LessThanOrEqualToThreshold"),
        "JVMMemoryPressure": (monitoring.JVM_PRESSURE_PERCENT, "GreaterThanOrEqualToThreshold"),
        # The default instance type (t3) is burstable.
        "CPUCreditBalance": (monitoring.CPU_CREDITS_LOW, "LessThanOrEqualToThreshold"),
    }
    for metric, (threshold, comparison) in expected.items():
        (alarm,) = _only(specs, "AWS/ES", metric)
        assert (alarm.threshold, alarm.comparison) == (threshold, comparison), metric
        assert _ref(alarm.dimensions["DomainName"]) == domain_id
        assert alarm.dimensions["ClientId"] == {"Ref": "AWS::AccountId"}


def test_table_and_bedrock_throttles_have_alarms(synth: Synth) -> None:
    from infra.components import monitoring
    from infra.config import CONTEXT_DEFAULTS

    specs = _alarm_specs(synth)
    (table_id,) = synth.of_type("AWS::DynamoDB::Table")
    for metric in ("ReadThrottleEvents", "WriteThrottleEvents"):
        (alarm,) = _only(specs, "AWS/DynamoDB", metric)
        assert _ref(alarm.dimensions["TableName"]) == table_id
        assert alarm.threshold == monitoring.THROTTLE_THRESHOLD
    bedrock = _only(specs, "AWS/Bedrock", "InvocationThrottles")
    assert {a.dimensions["ModelId"] for a in bedrock} == {
        CONTEXT_DEFAULTS["prme:embeddingModelId"],
        CONTEXT_DEFAULTS["prme:extractionModelId"],
    }
    for alarm in bedrock:
        assert (alarm.statistic, alarm.threshold) == ("Sum", monitoring.THROTTLE_THRESHOLD)


def test_every_alarm_notifies_and_is_on_the_dashboard(synth: Synth) -> None:
    specs = _alarm_specs(synth)
    assert all(s.has_action for s in specs)
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for spec in specs:
        assert json.dumps(spec.metric)[1:-1] in body, spec.metric


def test_development_profile_is_one_small_node_without_replicas(synth: Synth) -> None:
    (domain,) = synth.of_type("AWS::OpenSearchService::Domain").values()
    cluster = domain["Properties"]["ClusterConfig"]
    assert cluster["DedicatedMasterEnabled"] is False
    assert cluster["ZoneAwarenessEnabled"] is False
    for function in synth.of_type("AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables[Settings.env_name("opensearch_replicas")] == "0"


def test_production_profile_spreads_search_over_three_zones_with_masters_and_replicas(
    production_synth: Synth,
) -> None:
    from infra.config import PROFILES

    production = PROFILES["production"]
    (domain,) = production_synth.of_type("AWS::OpenSearchService::Domain").values()
    cluster = domain["Properties"]["ClusterConfig"]
    assert cluster["InstanceType"] == production["prme:searchInstanceType"]
    assert not cluster["InstanceType"].startswith(("t2.", "t3."))
    assert cluster["InstanceCount"] == 3
    assert cluster["ZoneAwarenessEnabled"] is True
    assert cluster["ZoneAwarenessConfig"] == {"AvailabilityZoneCount": 3}
    assert cluster["DedicatedMasterEnabled"] is True
    assert cluster["DedicatedMasterCount"] == 3
    assert cluster["DedicatedMasterType"] == production["prme:searchMasterInstanceType"]
    # The explicit context value wins over the profile's.
    assert domain["Properties"]["EBSOptions"]["VolumeSize"] == PRODUCTION_VOLUME_GB
    for function in production_synth.of_type("AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables[Settings.env_name("opensearch_replicas")] == "1"
    specs = _alarm_specs(production_synth)
    (free,) = _only(specs, "AWS/ES", "FreeStorageSpace")
    assert free.threshold == PRODUCTION_VOLUME_GB * 1024 // 4
    # Non-burstable instances earn no CPU credits: no alarm on them.
    assert not [s for s in specs if s.metric == "CPUCreditBalance"]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"prme:profile": "staging"}, "prme:profile must be one of"),
        ({"prme:searchReplicas": 1}, "prme:searchReplicas=1 needs more than 1 data nodes"),
        (
            {"prme:profile": "production", "prme:searchInstanceCount": 1},
            "prme:searchReplicas=1 needs more than 1",
        ),
        (
            {"prme:searchInstanceCount": 9, "prme:searchReplicas": 6},
            "prme:searchReplicas must be at most 5, got 6",
        ),
    ],
)
def test_context_that_cannot_work_is_refused(context: dict[str, Any], message: str) -> None:
    import aws_cdk as cdk

    from infra.config import ContextError, DeploymentConfig

    with pytest.raises(ContextError, match=re.escape(message)):
        DeploymentConfig.from_context(cdk.App(context=context).node)


def test_the_runbook_explains_every_alarm(synth: Synth) -> None:
    from infra.config import REPO_ROOT

    runbook = (REPO_ROOT / "docs" / "operations.md").read_text()
    for spec in _alarm_specs(synth):
        assert f"`{spec.namespace}` `{spec.metric}`" in runbook, spec.metric


def test_the_api_functions_body_limit_fits_lambdas_invoke_payload(synth: Synth) -> None:
    """Every body the api function accepts reaches it: escaped in the event's JSON (at most 3
    times larger) or base64-encoded, with room for the request line and headers."""
    (api,) = (
        f
        for f in synth.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "functions.api.handler"
    )
    limit = int(api["Properties"]["Environment"]["Variables"][Settings.env_name("max_body_bytes")])
    assert limit == LAMBDA_MAX_BODY_BYTES
    assert 3 * limit + 64 * 1024 <= LAMBDA_PAYLOAD_BYTES


def test_work_the_sweeper_gives_up_on_raises_an_alarm(synth: Synth) -> None:
    """Work failed by the maintenance sweeper never reaches a DLQ, so it has its own alarm on
    the metric the maintenance function publishes."""
    from prme.backends.aws.resources import OVERDUE_WORK_FAILED_METRIC

    (alarm,) = _only(_alarm_specs(synth), "PRME", OVERDUE_WORK_FAILED_METRIC)
    assert alarm.dimensions == {"service": "prme-maintenance"}
    assert (alarm.statistic, alarm.threshold) == ("Sum", 0)
    assert alarm.comparison == "GreaterThanThreshold"
