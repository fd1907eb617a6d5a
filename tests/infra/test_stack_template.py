"""The template reader the deployed-shape tests rely on resolves every function fully."""

from __future__ import annotations

import json

import pytest

from tests.harness.stack_template import LocalBinding, StackTemplate

pytestmark = pytest.mark.slow  # the shared synth: one per test run

BINDING = LocalBinding(
    table_name="t-table",
    queue_prefix="t-prefix",
    index_alias="t-alias",
    opensearch_url="http://127.0.0.1:1",
)


def test_every_function_environment_and_role_resolve_to_the_local_names(
    stack_template: StackTemplate,
) -> None:
    names = stack_template.function_names()
    assert {"api", "materializer", "extractor", "ingest", "maintenance"} <= set(names)
    for name in names:
        environment = stack_template.environment(name, BINDING)
        assert environment["PRME_TABLE_NAME"] == "t-table"
        assert environment["PRME_QUEUE_PREFIX"] == "t-prefix"
        assert environment["PRME_OPENSEARCH_INDEX_ALIAS"] == "t-alias"
        statements = json.dumps(stack_template.role_statements(name, BINDING))
        # Nothing left unresolved, and no deployed name leaks past the binding.
        assert "Fn::" not in statements and '"Ref"' not in statements
        if name != "indexsetup":  # the index custom resource never touches the table
            assert "table/t-table" in statements
        assert ":prme-" not in statements


def test_an_unknown_intrinsic_is_refused_not_passed_through(
    stack_template: StackTemplate,
) -> None:
    with pytest.raises(KeyError, match="Fn::ImportValue"):
        stack_template.resolve({"Fn::ImportValue": "x"}, BINDING)
