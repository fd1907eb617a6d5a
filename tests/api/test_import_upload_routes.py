"""Imports by upload over HTTP on both backends: open (201 with where to send the file), send
the file (a path on this API when embedded, a presigned S3 URL on AWS), start (202), then the
job's chunks, with a bad line reported by its number and never its content."""

from __future__ import annotations

import json
import uuid

import httpx

from tests.harness.http import Api

SECRET_WORD = "periwinkle-7731"


def ndjson(count: int, bad_line: int) -> bytes:
    lines = [json.dumps({"content": f"uploaded note {i} about herons"}) for i in range(count)]
    lines[bad_line - 1] = f"not json: {SECRET_WORD}"
    return ("\n".join(lines) + "\n").encode()


def send(api: Api, upload: dict[str, object], data: bytes) -> int:
    url, headers = str(upload["url"]), dict(upload["headers"])  # type: ignore[call-overload]
    if upload["send_api_key"]:
        return api.client.put(url, content=data, headers={**headers, **api.alice}).status_code
    return httpx.put(url, content=data, headers=headers, timeout=30.0).status_code


def test_a_file_is_opened_sent_started_and_split_into_chunks(api: Api) -> None:
    c = api.client
    data = ndjson(60, bad_line=41)
    opened = c.post("/v1/imports/uploads", json={"size_bytes": len(data)}, headers=api.alice)
    assert opened.status_code == 201, opened.text
    job, upload = opened.json()["job"], opened.json()["upload"]
    assert (job["status"], job["mode"], upload["size_bytes"]) == (
        "awaiting_upload",
        "upload",
        len(data),
    )
    start = f"/v1/imports/{job['import_id']}/start"

    early = c.post(start, headers=api.alice)
    assert early.status_code == 400  # nothing was sent yet: the import stays open
    assert c.get(f"/v1/imports/{job['import_id']}", headers=api.alice).json()["status"] == (
        "awaiting_upload"
    )
    assert send(api, upload, data) == 200
    # Another owner cannot start it: the id is not one of theirs.
    assert c.post(start, headers=api.bob).status_code == 404

    started = c.post(start, headers=api.alice)

    assert started.status_code == 202, started.text
    status = started.json()
    assert status["chunks_total"] == 2  # 59 good lines: chunks of at most 49 items
    assert status["items_failed"] == 1
    (error,) = status["errors"]
    assert error["line"] == 41
    assert SECRET_WORD not in started.text
    if upload["send_api_key"]:  # embedded: the chunks are committed before the answer
        assert (status["status"], status["items_accepted"]) == ("completed_with_errors", 59)
    else:  # AWS: workers commit the chunk messages
        assert status["status"] in {"queued", "running"}
    # Starting again sends nothing new and answers the same job.
    again = c.post(start, headers=api.alice)
    assert again.status_code == 202
    assert again.json()["import_id"] == job["import_id"]


def test_an_inline_import_has_no_file_to_start(api: Api) -> None:
    c = api.client
    submitted = c.post("/v1/imports", json={"items": [{"content": "a note"}]}, headers=api.alice)
    assert submitted.status_code == 202

    answer = c.post(f"/v1/imports/{submitted.json()['import_id']}/start", headers=api.alice)

    assert answer.status_code == 409
    assert answer.json()["error"] == "conflict"
    assert c.post(f"/v1/imports/{uuid.uuid4()}/start", headers=api.alice).status_code == 404
