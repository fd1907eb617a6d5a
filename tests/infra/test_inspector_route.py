"""On AWS the api function serves the inspector: in the synthesized stack a browser's GET of
`/ui`, `/ui/` and `/ui/<file>` reaches the api function unchanged, and nothing between API
Gateway and the function (a route to something else, a WAF, a header mapping) takes the
pages or their Content-Security-Policy away."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.harness.stack_template import StackTemplate

pytestmark = pytest.mark.slow  # the shared synth: one per test run

UI_PATHS = ("/ui", "/ui/", "/ui/js/app.js", "/ui/js/pages/review.js", "/ui/inspector.css")


def _route_pattern(path_key: str) -> re.Pattern[str]:
    """An HTTP API route path as a regex: `{name}` is one segment, `{name+}` the rest."""
    parts = []
    for segment in path_key.strip("/").split("/"):
        if segment.endswith("+}"):
            parts.append(".+")
        elif segment.startswith("{"):
            parts.append("[^/]+")
        else:
            parts.append(re.escape(segment))
    return re.compile("/" + "/".join(parts) + "/?")


def selected_route(routes: dict[str, dict[str, Any]], method: str, path: str) -> dict[str, Any]:
    """The route API Gateway picks for a request: an exact path over one with variables,
    a longer literal start over a shorter one, and `$default` when nothing else matches."""
    best: tuple[tuple[int, int], dict[str, Any]] | None = None
    default = None
    for route in routes.values():
        key = route["Properties"]["RouteKey"]
        if key == "$default":
            default = route
            continue
        route_method, path_key = key.split(" ", 1)
        if route_method not in (method, "ANY") or not _route_pattern(path_key).fullmatch(path):
            continue
        literal = path_key.split("{", 1)[0]
        rank = (int("{" not in path_key), len(literal))
        if best is None or rank > best[0]:
            best = (rank, route)
    if best is not None:
        return best[1]
    assert default is not None, f"no route takes {method} {path}"
    return default


def test_every_inspector_path_reaches_the_api_function(stack_template: StackTemplate) -> None:
    resources = stack_template.resources
    api_function = stack_template.logical_id("Workers/Api/Function")
    routes = stack_template.of_type("AWS::ApiGatewayV2::Route")
    for path in UI_PATHS:
        route = selected_route(routes, "GET", path)
        target = route["Properties"]["Target"]["Fn::Join"][1]
        assert target[0] == "integrations/"
        integration = resources[target[1]["Ref"]]["Properties"]
        assert integration["IntegrationType"] == "AWS_PROXY"
        assert integration["IntegrationUri"] == {"Fn::GetAtt": [api_function, "Arn"]}
        assert integration["PayloadFormatVersion"] == "2.0"
        # Nothing rewrites the request's path or the response's headers on the way.
        assert "RequestParameters" not in integration
        assert "ResponseParameters" not in integration
        assert route["Properties"]["AuthorizationType"] == "NONE"  # the pages need no key


def test_api_gateway_may_invoke_the_function_for_every_route_and_stage(
    stack_template: StackTemplate,
) -> None:
    api_function = stack_template.logical_id("Workers/Api/Function")
    api = stack_template.logical_id("Api/HttpApi")
    source_arns = [
        resource["Properties"]["SourceArn"]["Fn::Join"][1]
        for resource in stack_template.of_type("AWS::Lambda::Permission").values()
        if resource["Properties"]["FunctionName"] == {"Fn::GetAtt": [api_function, "Arn"]}
        and resource["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    assert source_arns
    for parts in source_arns:
        assert parts[-2:] == [{"Ref": api}, "/*/*"]


def test_no_firewall_or_edge_stands_in_front_of_the_pages(stack_template: StackTemplate) -> None:
    # A WAF rule set or a CloudFront response-headers policy added later must be checked
    # against /ui (static files, no API key on the first request) and the pages' own CSP.
    in_front = [
        cfn_type
        for resource in stack_template.resources.values()
        if (cfn_type := resource["Type"]).startswith(("AWS::WAFv2::", "AWS::CloudFront::"))
    ]
    assert in_front == []
