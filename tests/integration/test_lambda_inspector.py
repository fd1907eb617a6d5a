"""The api function serves the inspector's pages on AWS: API Gateway HTTP API (payload v2)
events for `/ui` reach the same FastAPI app through Mangum, with the pages' content types
and security headers, on the `$default` stage the stack deploys and under a named stage's
path prefix too."""

from __future__ import annotations

import base64
from typing import Any

from prme.http.inspector import CONTENT_SECURITY_POLICY
from tests.harness.lambda_events import Deployed, FakeLambdaContext, load_event


def ui_event(path: str, *, stage: str = "$default") -> dict[str, Any]:
    """A GET of `path` as API Gateway sends it: on a named stage the stage is the first
    segment of the path the function sees."""
    event = load_event("apigw_v2_get_event.json")
    event["headers"]["accept"] = "text/html,*/*"
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["requestContext"]["stage"] = stage
    return event


def invoke(event: dict[str, Any]) -> tuple[int, dict[str, str], str]:
    from functions import api

    response = api.handler(event, FakeLambdaContext())
    body = response.get("body") or ""
    if response.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    headers = {name.lower(): value for name, value in response["headers"].items()}
    return response["statusCode"], headers, body


# Each page file with its content type and a line only that file has.
PAGE_FILES = (
    ("ui/", "text/html; charset=utf-8", '<script type="module" src="js/app.js">'),
    ("ui/js/app.js", "text/javascript; charset=utf-8", "const PAGES = {"),
    ("ui/inspector.css", "text/css; charset=utf-8", ".skip-link"),
)


def assert_served_with_policy(prefix: str, stage: str) -> None:
    for path, content_type, marker in PAGE_FILES:
        status, headers, body = invoke(ui_event(f"{prefix}/{path}", stage=stage))
        assert status == 200, path
        assert headers["content-type"] == content_type
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert headers["x-content-type-options"] == "nosniff"
        assert marker in body
    # /ui sends the browser to /ui/, under the same prefix, so that the page's relative
    # asset URLs and its API calls (api.js takes the prefix from the page's path) go there.
    status, headers, _ = invoke(ui_event(f"{prefix}/ui", stage=stage))
    assert (status, headers["location"]) == (307, f"{prefix}/ui/")
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    status, headers, _ = invoke(ui_event(f"{prefix}/ui/js/nothing-here.js", stage=stage))
    assert status == 404
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_the_api_function_serves_the_pages_on_the_default_stage(deployed: Deployed) -> None:
    assert_served_with_policy("", "$default")


def test_under_a_named_stage_the_pages_and_the_api_keep_the_stage_prefix(
    deployed: Deployed,
) -> None:
    from functions import api

    assert_served_with_policy("/prod", "prod")
    # A stage named like the pages' own prefix: /ui/ui/ is the page, once.
    assert_served_with_policy("/ui", "ui")
    event = ui_event("/prod/v1/stats", stage="prod")
    event["headers"]["authorization"] = f"Bearer {deployed.alice_key}"
    assert api.handler(event, FakeLambdaContext())["statusCode"] == 200
    # A stage named like the API's first segment still routes past the prefix only once.
    event = ui_event("/v1/v1/stats", stage="v1")
    event["headers"]["authorization"] = f"Bearer {deployed.alice_key}"
    assert api.handler(event, FakeLambdaContext())["statusCode"] == 200
