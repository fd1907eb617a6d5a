"""POST /v1/imports and GET /v1/imports/{import_id} on both backends: 202 with the job, the
whole batch checked before anything is written, Idempotency-Key replays, owner scoping."""

from __future__ import annotations

import uuid
from typing import Any

from prme.model.imports import MAX_IMPORT_ITEMS
from tests.harness.http import Api


def items(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"content": f"bulk note {i} about herons", **extra} for i in range(count)]


def events_of(api: Api, headers: dict[str, str]) -> int:
    answer: int = api.client.get("/v1/stats", headers=headers).json()["events"]
    return answer


def test_an_import_is_accepted_with_its_job_and_read_back(api: Api) -> None:
    c = api.client
    answer = c.post("/v1/imports", json={"items": items(120)}, headers=api.alice)

    assert answer.status_code == 202, answer.text
    job = answer.json()
    assert (job["items_total"], job["chunks_total"], job["mode"]) == (120, 3, "inline")
    read = c.get(f"/v1/imports/{job['import_id']}", headers=api.alice)
    assert read.status_code == 200
    assert read.json()["import_id"] == job["import_id"]
    assert read.json()["status"] in {"queued", "completed"}
    # Another owner, or another tenant's owner of the same name, does not find it.
    for stranger in (api.bob, api.other_tenant):
        assert c.get(f"/v1/imports/{job['import_id']}", headers=stranger).status_code == 404
    assert c.get(f"/v1/imports/{uuid.uuid4()}", headers=api.alice).status_code == 404


def test_a_bad_item_refuses_the_whole_import_and_writes_nothing(api: Api) -> None:
    c = api.client
    batch = items(30)
    batch[17] = {"content": "x", "event_time": "2024-03-10T01:30:00"}  # no time zone

    answer = c.post("/v1/imports", json={"items": batch}, headers=api.alice)

    assert answer.status_code == 422
    assert answer.json()["detail"][0]["loc"][:4] == ["body", "items", 17, "event_time"]
    too_many = c.post("/v1/imports", json={"items": items(MAX_IMPORT_ITEMS + 1)}, headers=api.alice)
    assert too_many.status_code == 422
    huge = [{"content": "\U0001f426" * 45_000}]  # 180,000 bytes: more than one message holds
    assert c.post("/v1/imports", json={"items": huge}, headers=api.alice).status_code == 422
    assert events_of(api, api.alice) == 0


def test_the_same_key_returns_the_same_import_and_another_body_is_409(api: Api) -> None:
    c = api.client
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = c.post("/v1/imports", json={"items": items(5)}, headers={**api.alice, **key})
    again = c.post("/v1/imports", json={"items": items(5)}, headers={**api.alice, **key})
    other = c.post("/v1/imports", json={"items": items(6)}, headers={**api.alice, **key})

    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json()["import_id"] == first.json()["import_id"]
    assert other.status_code == 409
    assert other.json()["error"] == "conflict"


def test_an_operator_imports_for_a_named_user_and_an_owner_key_cannot(api: Api) -> None:
    c = api.client
    body = {"items": items(2), "user_id": "carol"}
    answer = c.post("/v1/imports", json=body, headers=api.operator)
    assert answer.status_code == 202, answer.text
    import_id = answer.json()["import_id"]
    read = c.get(f"/v1/imports/{import_id}", params={"user_id": "carol"}, headers=api.operator)
    assert read.status_code == 200
    assert c.post("/v1/imports", json={"items": items(2)}, headers=api.operator).status_code == 422
    assert c.post("/v1/imports", json=body, headers=api.alice).status_code == 403
