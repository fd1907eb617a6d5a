"""AWS Lambda's payload limits as tests can apply them, around a handler called in-process.

A synchronous invoke refuses an event over 6,291,456 bytes, and the Python runtime fails an
invocation whose return value, JSON-encoded with its defaults (ASCII escaping), is larger.
API Gateway answers either failure with a 500 and its own body; `invoke` answers the same, so
a test sees what a caller behind API Gateway would. The encoding API Gateway uses for the event
is not documented: it is measured here with ASCII escaping, the larger of the two readings.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prme.model.input_policy import LAMBDA_PAYLOAD_BYTES
from tests.harness.lambda_events import FakeLambdaContext, load_event

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
# What API Gateway returns when it could not invoke the function or the function failed.
GATEWAY_500 = {"statusCode": 500, "body": '{"message":"Internal Server Error"}'}
# Content types API Gateway passes as text; every other body arrives base64-encoded.
_TEXT_TYPES = ("application/json", "text/")


@dataclass(frozen=True)
class Invocation:
    status: int
    body: bytes
    event_bytes: int
    response_bytes: int | None
    # Whether Lambda ran the handler and returned its answer (False: API Gateway's 500).
    delivered: bool

    def json(self) -> Any:
        return json.loads(self.body)


def payload_bytes(value: Any) -> int:
    """A payload's size as Lambda counts it: the JSON text of the value, ASCII-escaped."""
    return len(json.dumps(value).encode())


def api_event(
    path: str,
    body: bytes,
    *,
    key: str | None,
    content_type: str = "application/json",
) -> dict[str, Any]:
    """An HTTP API (payload 2.0) POST as API Gateway builds it: text bodies as strings, any
    other content type base64-encoded."""
    event = load_event("apigw_v2_store.json")
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["headers"]["content-type"] = content_type
    event["headers"]["content-length"] = str(len(body))
    if path == "/mcp":
        event["headers"]["accept"] = "application/json, text/event-stream"
    if key is not None:
        event["headers"]["authorization"] = f"Bearer {key}"
    if content_type.startswith(_TEXT_TYPES):
        event["body"] = body.decode()
        event["isBase64Encoded"] = False
    else:
        event["body"] = base64.b64encode(body).decode()
        event["isBase64Encoded"] = True
    return event


def invoke(handler: Handler, event: dict[str, Any], context: Any | None = None) -> Invocation:
    """Run `handler` under Lambda's payload limits, as API Gateway would reach it."""
    event_bytes = payload_bytes(event)
    if event_bytes > LAMBDA_PAYLOAD_BYTES:
        return _gateway_500(event_bytes, None)
    # The function receives a decoded copy, never the test's own objects.
    response = handler(json.loads(json.dumps(event)), context or FakeLambdaContext())
    response_bytes = payload_bytes(response)
    if response_bytes > LAMBDA_PAYLOAD_BYTES:
        return _gateway_500(event_bytes, response_bytes)
    body = response.get("body", "")
    raw = base64.b64decode(body) if response.get("isBase64Encoded") else body.encode()
    return Invocation(response["statusCode"], raw, event_bytes, response_bytes, delivered=True)


def _gateway_500(event_bytes: int, response_bytes: int | None) -> Invocation:
    body = str(GATEWAY_500["body"]).encode()
    return Invocation(500, body, event_bytes, response_bytes, delivered=False)
