"""Each Lambda handler run under exactly its role's statements from the synthesized template,
with the template's environment, against a moto server that enforces IAM."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from tests.harness.cloudformation import ResponseCatcher, cloudformation_request
from tests.harness.iam import IamDeployment, IamServer, iam_deployment
from tests.harness.iam_scenarios import (
    RunAs,
    api_erases_a_user,
    api_holds_a_tenant_to_its_limits,
    api_keeps_ranking_profiles,
    api_stores_and_retrieves,
    import_materialize_retrieve,
    ingest_rejects_into_its_dlq,
    ingest_then_extract,
    maintenance_announces_overdue_work,
    role_switcher,
)
from tests.harness.iam_upload_scenario import upload_split_and_commit
from tests.harness.lambda_events import (
    FakeLambdaContext,
)
from tests.harness.opensearch_iam_proxy import AuthorizingProxy
from tests.harness.stack_template import StackTemplate


@pytest.fixture
def iam_deployed(
    iam_aws: IamServer,
    stack_template: StackTemplate,
    opensearch_url: str,
    opensearch_iam_proxy: AuthorizingProxy,
) -> Iterator[IamDeployment]:
    yield from iam_deployment(iam_aws, stack_template, opensearch_url, opensearch_iam_proxy)


# Each runs the handlers of one path under the statements the template gives their roles.
ROLE_SCENARIOS = [
    ingest_rejects_into_its_dlq,
    api_stores_and_retrieves,
    api_erases_a_user,
    api_holds_a_tenant_to_its_limits,
    api_keeps_ranking_profiles,
    import_materialize_retrieve,
    ingest_then_extract,
    maintenance_announces_overdue_work,
    upload_split_and_commit,
]


@pytest.mark.parametrize("scenario", ROLE_SCENARIOS, ids=lambda scenario: scenario.__name__)
def test_each_path_runs_under_its_functions_roles(
    iam_deployed: IamDeployment,
    monkeypatch: pytest.MonkeyPatch,
    scenario: Callable[[IamDeployment, RunAs], None],
) -> None:
    scenario(iam_deployed, role_switcher(iam_deployed, monkeypatch))


def test_index_setup_creates_the_index_under_its_role(
    iam_deployed: IamDeployment,
    monkeypatch: pytest.MonkeyPatch,
    response_catcher: ResponseCatcher,
    opensearch_url: str,
) -> None:
    """The deploy-time custom resource, with the properties the template gives it, creates the
    index through the authorizing proxy holding only the indexsetup role's verbs."""
    from functions import index_setup
    from prme.backends.aws.opensearch_index import VectorShape, build_opensearch_client

    (resource,) = iam_deployed.stack.of_type("Custom::PrmeSearchIndex").values()
    properties = {
        key: str(value) for key, value in resource["Properties"].items() if key != "ServiceToken"
    }
    alias = iam_deployed.binding.index_alias
    properties["IndexAlias"] = alias
    direct = build_opensearch_client(opensearch_url, auth="none", region=None)
    try:
        # The harness made the test's index; the deploy makes it anew.
        direct.indices.delete(index=f"{alias}-v*")
        role_switcher(iam_deployed, monkeypatch)("indexsetup")
        event = cloudformation_request("Create", response_catcher.url("create"), properties)
        index_setup.handler(event, cast(Any, FakeLambdaContext()))
        answer = response_catcher.caught[-1].body
        assert answer["Status"] == "SUCCESS", answer["Reason"]
        ((_, index),) = direct.indices.get(index=alias).items()
        shape = VectorShape.of_mapping(index["mappings"])
        assert shape is not None and shape.dimension == int(properties["Dimension"])
    finally:
        direct.close()
