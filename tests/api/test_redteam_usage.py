"""Red-team findings on GET /v1/usage: writes left unmetered, and ranges at the calendar's
edges that crash the report instead of being refused."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.http import Api


def _export_records(api: Api, headers: dict[str, str]) -> list[dict[str, Any]]:
    page = api.client.get("/v1/export", headers=headers).json()
    assert page["next_cursor"] is None
    records: list[dict[str, Any]] = page["records"]
    return records


def test_sources_written_by_post_import_are_metered(api: Api) -> None:
    c = api.client
    for text in ("Alice keeps bees", "Alice sails on Sundays"):
        assert c.post("/v1/store", json={"content": text}, headers=api.alice).status_code == 200
    events = [r for r in _export_records(api, api.alice) if r["kind"] == "event"]
    before = c.get("/v1/usage", headers=api.operator).json()["totals"]

    imported = c.post("/v1/import", json={"version": 1, "records": events}, headers=api.bob)

    assert imported.status_code == 200, imported.text
    assert imported.json()["events"] == 2
    after = c.get("/v1/usage", params={"user_id": "bob"}, headers=api.operator).json()
    assert before  # alice's stores are metered ...
    written = sum(t["units"]["records"] for t in after["totals"])
    assert written == 2  # ... bob's two imported sources are not


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("0001-01-01T00:00:00+01:00", "0001-01-02T00:00:00+01:00"),
        ("9999-12-30T00:00:00-01:00", "9999-12-31T23:00:00-01:00"),
    ],
)
def test_a_range_past_the_calendars_edge_is_refused_not_a_server_error(
    api: Api, start: str, end: str
) -> None:
    answer = api.client.get("/v1/usage", params={"start": start, "end": end}, headers=api.operator)

    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"][-1] == "start"
