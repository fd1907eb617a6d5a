"""The input policy's check of a large body: locations stay exact, and the HTTP edge runs the
check off the event loop, since it happens before authentication and a few MiB of small
values cost CPU seconds (a keyless caller could otherwise stall every other request)."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError

from prme.http import body_policy
from prme.http.body_policy import BodyPolicyMiddleware
from prme.model import inputs
from prme.model.input_policy import MAX_SAFE_INTEGER, InputPolicyError, check_json_value
from prme.model.inputs import StoreInput


@pytest.mark.parametrize(
    ("value", "location", "message"),
    [
        ({"a": [0] * 1000 + [math.nan]}, ("a", 1000), "finite"),
        ({"a": [0, 1, [2, [MAX_SAFE_INTEGER + 1]]]}, ("a", 2, 1, 0), "integers"),
        ({"a": [{"k": "fine"}, {"k": "bad\x00"}]}, ("a", 1, "k"), "NUL"),
        ({"a": [{"b\ud800": 1}]}, ("a", 0), "object key"),
        ({"a": [[[[]]]]}, ("a", 0, 0, 0), "deeper than 4"),
        ({"a": [[[[1]]]]}, ("a", 0, 0, 0), "deeper than 4"),
    ],
)
def test_a_fault_is_located_exactly(
    value: Any, location: tuple[str | int, ...], message: str
) -> None:
    with pytest.raises(InputPolicyError) as error:
        check_json_value(value, max_depth=4)
    assert error.value.path == location
    assert message in error.value.message


def test_values_within_the_limits_pass() -> None:
    check_json_value(
        {"a": [0, -MAX_SAFE_INTEGER, 1.5, True, None, "é", [], {}, [[[]]]]}, max_depth=5
    )
    check_json_value(7, max_depth=1)


def test_the_body_is_checked_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    on_loop: list[bool] = []
    checked = body_policy.policy_problem

    def recording(body: bytes) -> tuple[str, tuple[str | int, ...]] | None:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        return checked(body)

    monkeypatch.setattr(body_policy, "policy_problem", recording)
    app = FastAPI()

    @app.post("/echo")
    def echo(body: dict[str, Any]) -> int:
        return len(body["a"])

    app.add_middleware(BodyPolicyMiddleware)
    with TestClient(app) as client:
        fine = client.post("/echo", content=json.dumps({"a": [0] * 100_000}), headers=_JSON)
        refused = client.post("/echo", content=b'{"a": [0, NaN]}', headers=_JSON)

    assert (fine.status_code, fine.json()) == (200, 100_000)
    assert refused.status_code == 422
    assert on_loop == [False, False]


_JSON = {"content-type": "application/json"}


def test_oversized_metadata_is_refused_by_its_size_before_any_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked: list[object] = []
    monkeypatch.setattr(inputs, "check_json_value", lambda value, **_: walked.append(value))

    with pytest.raises(ValidationError, match="at most 16384 bytes"):
        StoreInput(content="x", metadata={"a": [0] * 100_000})
    assert walked == []
    # Within the size, every value is still walked.
    StoreInput(content="x", metadata={"a": [0] * 10})
    assert walked == [{"a": [0] * 10}]


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"a": math.nan}, "metadata.a numbers must be finite"),
        ({"a": "\ud800"}, "metadata.a must be valid Unicode"),
        ({"a": {1, 2}}, "metadata.a set is not a JSON value"),
    ],
)
def test_small_metadata_faults_keep_their_messages(metadata: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        StoreInput(content="x", metadata=metadata)
