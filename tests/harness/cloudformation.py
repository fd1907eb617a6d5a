"""CloudFormation custom resource requests as CloudFormation sends them, and a local HTTP
server standing in for the pre-signed ResponseURL that catches the answers."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.harness.lambda_events import load_event


@dataclass
class CaughtResponse:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ResponseCatcher:
    """Every PUT to the server, in order."""

    base_url: str
    caught: list[CaughtResponse] = field(default_factory=list)

    def url(self, name: str) -> str:
        # A query string like the pre-signed URL's, which the answer must not drop.
        return f"{self.base_url}/{name}?X-Amz-Signature=abc"


@pytest.fixture
def response_catcher() -> Iterator[ResponseCatcher]:
    catcher = ResponseCatcher("")

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            catcher.caught.append(
                CaughtResponse(
                    "PUT",
                    self.path,
                    {key.lower(): value for key, value in self.headers.items()},
                    json.loads(self.rfile.read(length)),
                )
            )
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    catcher.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield catcher
    finally:
        server.shutdown()
        server.server_close()


def cloudformation_request(
    request_type: str,
    response_url: str,
    properties: dict[str, str],
    *,
    physical_id: str | None = None,
    old_properties: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A custom resource request as CloudFormation sends it (from tests/events)."""
    event = copy.deepcopy(load_event("cloudformation_index_create.json"))
    event["RequestType"] = request_type
    event["ResponseURL"] = response_url
    event["ResourceProperties"] = {
        "ServiceToken": event["ServiceToken"],
        **properties,
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    if old_properties is not None:
        event["OldResourceProperties"] = {"ServiceToken": event["ServiceToken"], **old_properties}
    return event
