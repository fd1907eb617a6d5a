"""Export and import over HTTP: pages that a client follows to the end, batches written under the
caller's owner whatever the records claim, and a bad record refused with its line."""

from __future__ import annotations

from typing import Any

import pytest

from prme.engine import portability as engine_portability
from tests.harness.http import Api


def _export(api: Api, headers: dict[str, str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header: dict[str, Any] | None = None
    records: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(50):
        params = {"cursor": cursor} if cursor is not None else {}
        response = api.client.get("/v1/export", params=params, headers=headers)
        assert response.status_code == 200, response.text
        page = response.json()
        header = header or page["header"]
        records += page["records"]
        cursor = page["next_cursor"]
        if cursor is None:
            assert header is not None
            return header, records
    raise AssertionError("the export never ended")


def _context(api: Api, headers: dict[str, str]) -> str:
    response = api.client.post(
        "/v1/retrieve", json={"query": "What does Alice drink?"}, headers=headers
    )
    assert response.status_code == 200, response.text
    context: str = response.json()["bundle"]["context"]
    return context


def test_an_export_followed_page_by_page_imports_into_another_owner(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_portability, "EXPORT_PAGE_RECORDS", 2)
    for text in ("Alice drinks green tea.", "Alice walks to work.", "Alice drinks no coffee."):
        stored = api.client.post("/v1/store", json={"content": text}, headers=api.alice)
        assert stored.status_code == 200, stored.text

    header, records = _export(api, api.alice)
    assert header["counts"] == {"events": 3, "nodes": 3, "edges": 0}
    assert [r["kind"] for r in records] == ["event"] * 3 + ["node"] * 3
    # The records claim alice; written with bob's key they are bob's.
    claimed = [{**r, "owner_id": "alice"} for r in records]
    imported = api.client.post(
        "/v1/import", json={"version": 1, "records": claimed}, headers=api.bob
    )

    assert imported.status_code == 200, imported.text
    assert imported.json() == {"events": 3, "nodes": 3, "edges": 0, "skipped": 0, "pending": 0}
    assert _context(api, api.bob) == _context(api, api.alice)
    assert _export(api, api.bob)[1] == records


def test_a_bad_record_is_refused_with_its_line_and_nothing_is_written(api: Api) -> None:
    stored = api.client.post("/v1/store", json={"content": "Alice drinks tea."}, headers=api.alice)
    assert stored.status_code == 200, stored.text
    _, records = _export(api, api.alice)
    event, node = records
    bad_node = {**node, "evidence_refs": ["00000000-0000-0000-0000-000000000000"]}

    refused = api.client.post(
        "/v1/import",
        json={"version": 1, "first_line": 10, "records": [event, bad_node]},
        headers=api.bob,
    )
    newer = api.client.post("/v1/import", json={"version": 2, "records": []}, headers=api.bob)
    bad_cursor = api.client.get("/v1/export", params={"cursor": "receipts:"}, headers=api.bob)

    assert refused.status_code == 422
    (problem,) = refused.json()["detail"]
    assert problem["loc"] == ["body", "records", 1]
    assert problem["msg"].startswith("line 11: names event")
    assert newer.status_code == 422
    assert bad_cursor.status_code == 422
    stats = api.client.get("/v1/stats", headers=api.bob).json()
    assert (stats["events"], stats["nodes"]) == (0, 0)
