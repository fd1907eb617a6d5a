"""Hostile query strings against the receipt listings (GET /v1/retrievals and
GET /v1/nodes/{id}/retrievals) on both backends: a forged cursor or a time at the edge of the
calendar is refused or answered, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.harness.http import api_app, bearer


@dataclass
class Listing:
    client: TestClient
    alice: dict[str, str]
    node_id: str
    request_id: str


@pytest.fixture(params=["embedded", "aws"])
def listing(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Listing]:
    with (
        api_app(request, tmp_path) as (app, _creds, keys),
        TestClient(app, raise_server_exceptions=False) as client,
    ):
        alice = bearer(keys["alice"])
        stored = client.post("/v1/store", json={"content": "The boat is blue."}, headers=alice)
        retrieved = client.post("/v1/retrieve", json={"query": "boat colour"}, headers=alice)
        assert stored.status_code == retrieved.status_code == 200
        yield Listing(
            client, alice, stored.json()["node_id"], retrieved.json()["metrics"]["request_id"]
        )


# Cursors of the listing's shape (time, bar, id) whose time is no time: made by hand, never
# by the listing.
FORGED_CURSORS = [
    "2026-13-45T99:99:99.000000Z|0b8f0a4e-6a3c-4d43-9d55-3c9a2d7b1f11",
    "0000-00-00T00:00:00.000000Z|0b8f0a4e-6a3c-4d43-9d55-3c9a2d7b1f11",
    "2026-02-30T00:00:00.000000Z|0b8f0a4e-6a3c-4d43-9d55-3c9a2d7b1f11",
    # No request id: over DynamoDB's 1,024-byte sort key once prefixed and escaped (the local
    # DynamoDB does not check that limit, the real one refuses the query).
    "2026-01-01T00:00:00.000000Z|" + "\U0001f600" * 256,
    "2026-01-01T00:00:00.000000Z|" + "#" * 256,
    "2026-01-01T00:00:00.000000Z|x",
]


def test_a_forged_cursor_is_422_on_both_listings(listing: Listing) -> None:
    for cursor in FORGED_CURSORS:
        for path in ("/v1/retrievals", f"/v1/nodes/{listing.node_id}/retrievals"):
            response = listing.client.get(path, params={"cursor": cursor}, headers=listing.alice)

            assert response.status_code == 422, (cursor, path, response.text[:200])
            assert cursor not in response.text


# (query, whether the one receipt is listed): bounds past the calendar's ends in UTC, which
# the offset pushes outside what a datetime holds.
EDGE_BOUNDS = [
    ({"since": "0001-01-01T00:00:00+01:00"}, True),
    ({"since": "9999-12-31T23:59:59-01:00"}, False),
    ({"until": "9999-12-31T23:59:59-01:00"}, True),
    ({"until": "0001-01-01T00:00:00+01:00"}, False),
    ({"since": "0001-01-01T00:00:00+14:00", "until": "9999-12-31T23:59:59-14:00"}, True),
]


def test_time_bounds_at_the_ends_of_the_calendar_answer(listing: Listing) -> None:
    for bounds, listed in EDGE_BOUNDS:
        response = listing.client.get("/v1/retrievals", params=bounds, headers=listing.alice)

        assert response.status_code == 200, (bounds, response.text[:200])
        ids = [r["request_id"] for r in response.json()["retrievals"]]
        assert ids == ([listing.request_id] if listed else []), bounds
