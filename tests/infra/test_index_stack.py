"""The stack creates the search index itself: a custom resource served by our own function,
with the alias and the dimension the functions are given, and only the grants it needs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prme.settings import Settings
from tests.harness.stack_template import LocalBinding, StackTemplate

pytestmark = pytest.mark.slow  # the shared synth: one per test run

BINDING = LocalBinding(
    table_name="t-table",
    queue_prefix="t-prefix",
    index_alias="t-alias",
    opensearch_url="http://127.0.0.1:1",
)


def index_resource(stack_template: StackTemplate) -> dict[str, Any]:
    (resource,) = stack_template.of_type("Custom::PrmeSearchIndex").values()
    return resource


def test_the_index_is_made_with_the_alias_and_dimension_every_function_uses(
    stack_template: StackTemplate, monkeypatch: pytest.MonkeyPatch
) -> None:
    properties = index_resource(stack_template)["Properties"]
    token_function = properties["ServiceToken"]["Fn::GetAtt"][0]

    assert token_function == stack_template.logical_id("Workers/Indexsetup/Function")
    assert (
        stack_template.function("indexsetup")["Properties"]["Handler"]
        == "functions.index_setup.handler"
    )
    for name in ("api", "materializer", "ingest", "maintenance"):
        variables = stack_template.function(name)["Properties"]["Environment"]["Variables"]
        # What the function's own settings say it embeds with is what the index is made for.
        for key, value in variables.items():
            monkeypatch.setenv(key, str(value))
        settings = Settings()
        assert properties["Dimension"] == str(settings.embedding_dimension)
        assert properties["IndexAlias"] == settings.opensearch_index_alias
    assert properties["Dimension"] == "1024"  # Titan Text Embeddings v2, the stack's embedder


def test_the_index_setup_role_may_only_read_and_create_on_the_domain(
    stack_template: StackTemplate,
) -> None:
    statements = stack_template.role_statements("indexsetup", BINDING)
    search = [s for s in statements if any(str(a).startswith("es:") for a in _listed(s["Action"]))]

    (grant,) = search
    assert sorted(_listed(grant["Action"])) == ["es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPut"]
    others = json.dumps([s for s in statements if s is not grant])
    assert "dynamodb:" not in others and "sqs:" not in others and "bedrock:" not in others
    (domain,) = stack_template.of_type("AWS::OpenSearchService::Domain").values()
    role_id = stack_template.function("indexsetup")["Properties"]["Role"]["Fn::GetAtt"][0]
    access = domain["Properties"]["AccessPolicies"]["Statement"]
    naming_role = [s for s in access if role_id in json.dumps(s["Principal"])]
    assert [sorted(s["Action"]) for s in naming_role] == [
        ["es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPut"]
    ]


def test_an_alarm_watches_index_refusals_of_every_function(stack_template: StackTemplate) -> None:
    alarms = [
        alarm["Properties"]
        for alarm in stack_template.of_type("AWS::CloudWatch::Alarm").values()
        if "SearchIndexRefused" in json.dumps(alarm)
    ]

    (alarm,) = alarms
    services = {
        dimension["Value"]
        for query in alarm["Metrics"]
        if "MetricStat" in query
        for dimension in query["MetricStat"]["Metric"]["Dimensions"]
    }
    assert services == {f"prme-{name}" for name in stack_template.function_names()}
    assert alarm["Threshold"] == 0
    assert alarm["AlarmActions"]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_an_alarm_watches_lost_usage_entries_of_every_function(
    stack_template: StackTemplate,
) -> None:
    from prme.backends.aws.resources import USAGE_NOT_RECORDED_METRIC

    (alarm,) = [
        alarm["Properties"]
        for alarm in stack_template.of_type("AWS::CloudWatch::Alarm").values()
        if USAGE_NOT_RECORDED_METRIC in json.dumps(alarm)
    ]
    services = {
        dimension["Value"]
        for query in alarm["Metrics"]
        if "MetricStat" in query
        for dimension in query["MetricStat"]["Metric"]["Dimensions"]
    }
    assert services == {f"prme-{name}" for name in stack_template.function_names()}
    assert alarm["Threshold"] == 0
    assert alarm["AlarmActions"]
