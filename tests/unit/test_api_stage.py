"""A named API Gateway stage becomes the app's root path; `$default` and foreign paths do not."""

from __future__ import annotations

from typing import Any

import pytest

from functions.api_stage import stage_prefix


def scope(path: str, stage: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {"version": "2.0", "requestContext": {}}
    if stage is not None:
        event["requestContext"]["stage"] = stage
    return {"type": "http", "path": path, "aws.event": event}


@pytest.mark.parametrize(
    ("path", "stage", "prefix"),
    [
        ("/prod/ui/", "prod", "/prod"),
        ("/prod", "prod", "/prod"),
        ("/v1/v1/stats", "v1", "/v1"),
        ("/ui/", "$default", ""),
        ("/ui/", None, ""),
        # A custom domain's mapping strips the stage: the path does not start with it.
        ("/ui/", "prod", ""),
        ("/production/ui/", "prod", ""),
    ],
)
def test_stage_prefix(path: str, stage: str | None, prefix: str) -> None:
    assert stage_prefix(scope(path, stage)) == prefix


def test_a_scope_without_an_event_has_no_prefix() -> None:
    assert stage_prefix({"type": "http", "path": "/prod/ui/"}) == ""
