"""A corpus of hostile inputs (issue 15) against the real app on both backends.

Each case is something the schema allows or the JSON parser accepts but the code could not
digest: it must be refused with a 4xx whose body is JSON, short and encodable, and nothing
may be written. Raw bodies are sent as bytes, since NaN and lone surrogates cannot be built
by a well-behaved JSON encoder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from prme.engine.service import MemoryEngine
from prme.model.records import OwnerKey
from tests.harness.http import TENANT, api_app, bearer

ALICE = OwnerKey(tenant_id=TENANT, owner_id="alice")
JSON = {"content-type": "application/json"}


@dataclass
class Hostile:
    client: TestClient
    engine: MemoryEngine
    alice: dict[str, str]
    operator: dict[str, str]

    def written(self) -> int:
        """Everything alice has: nodes and journal records (a refused write adds neither)."""
        ledger = self.engine.deps.ledger
        return len(ledger.list_nodes(ALICE)) + len(ledger.list_journal(ALICE, ""))


@pytest.fixture(params=["embedded", "aws"])
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Hostile]:
    with (
        api_app(request, tmp_path) as (app, _creds, keys),
        TestClient(app, raise_server_exceptions=False) as client,
    ):
        yield Hostile(
            client, app.state.runtime.engine, bearer(keys["alice"]), bearer(keys["operator"])
        )


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


# (route, raw JSON body): each must be refused with 422 and write nothing.
BAD_WRITES: list[tuple[str, str]] = [
    # Metadata deeper than the read path's JSON parser can load back (the critical finding).
    ("/v1/store", '{"content": "hi", "metadata": ' + nested(220) + "}"),
    ("/v1/store", '{"content": "hi", "metadata": ' + nested(40) + "}"),
    ("/v1/ingest", '{"content": "hi", "metadata": ' + nested(220) + "}"),
    ("/v1/ingest/fast", '{"items": [{"content": "hi", "metadata": ' + nested(220) + "}]}"),
    # A body nested past the interpreter's recursion limit.
    ("/v1/store", '{"content": "hi", "metadata": {"a": ' + "[" * 5000 + "]" * 5000 + "}}"),
    # Not-a-number and infinities, in typed fields and inside metadata.
    ("/v1/store", '{"content": "hi", "confidence": NaN}'),
    ("/v1/store", '{"content": "hi", "confidence": Infinity}'),
    ("/v1/store", '{"content": "hi", "metadata": {"score": NaN}}'),
    ("/v1/store", '{"content": "hi", "metadata": {"score": -Infinity}}'),
    # Integers no JSON reader (or DynamoDB) keeps exactly.
    ("/v1/store", '{"content": "hi", "metadata": {"n": ' + "9" * 5000 + "}}"),
    ("/v1/store", '{"content": "hi", "metadata": {"n": 123456789012345678901234567890}}'),
    # Lone surrogates, in every text field.
    ("/v1/store", '{"content": "hi \\ud800"}'),
    ("/v1/store", '{"content": "hi", "speaker": "Ann\\udc00"}'),
    ("/v1/store", '{"content": "hi", "session_id": "s\\ud83d"}'),
    ("/v1/store", '{"content": "hi", "metadata": {"k": "\\ud800"}}'),
    ("/v1/store", '{"content": "hi", "metadata": {"\\ud800": 1}}'),
    ("/v1/store", '{"content": "hi", "user_id": "alice\\ud800"}'),
    ("/v1/ingest", '{"content": "hi \\udfff"}'),
    ("/v1/ingest/fast", '{"items": [{"content": "ok"}, {"content": "x\\ud800"}]}'),
    # NUL and invisible characters where people read names.
    ("/v1/store", '{"content": "hi", "session_id": "s\\u0000"}'),
    ("/v1/store", '{"content": "hi \\u0000 there"}'),
    ("/v1/store", '{"content": "hi", "speaker": "Caroline\\u200b"}'),
    ("/v1/store", '{"content": "hi", "speaker": "Caro\\u2060line"}'),
    ("/v1/store", '{"content": "hi", "speaker": "\\ufeffCaroline"}'),
    ("/v1/store", '{"content": "hi", "speaker": "Caroline\\u202e"}'),
    ("/v1/store", '{"content": "hi", "session_id": "s\\u200d1"}'),
]

BAD_READS: list[tuple[str, str]] = [
    ("/v1/retrieve", '{"query": "hi", "min_score": NaN}'),
    ("/v1/retrieve", '{"query": "hi", "min_score": Infinity}'),
    ("/v1/retrieve", '{"query": "hi", "token_budget": NaN}'),
    ("/v1/retrieve", '{"query": "hi", "token_budget": -Infinity}'),
    ("/v1/retrieve", '{"query": "hi", "ranking_multipliers": {"recency": NaN}}'),
    ("/v1/retrieve", '{"query": "hi", "ranking_multipliers": {"\\ud800": 1.0}}'),
    ("/v1/retrieve", '{"query": "hi \\ud800"}'),
    ("/v1/retrieve", '{"query": "hi", "user_id": "\\udbff"}'),
    ("/v1/materializations/process", '{"budget_ms": NaN}'),
]


def assert_safe_error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"].startswith("application/json")
    assert len(response.content) < 8_192
    body: dict[str, Any] = response.json()
    assert "detail" in body
    return body


@pytest.mark.parametrize(("path", "raw"), BAD_WRITES, ids=[f"{p}:{r[:50]}" for p, r in BAD_WRITES])
def test_hostile_writes_are_422_and_write_nothing(hostile: Hostile, path: str, raw: str) -> None:
    response = hostile.client.post(path, content=raw.encode(), headers={**JSON, **hostile.alice})

    assert_safe_error(response, 422)
    assert hostile.written() == 0
    retrieve = hostile.client.post("/v1/retrieve", json={"query": "hi"}, headers=hostile.alice)
    assert retrieve.status_code == 200
    assert retrieve.json()["results"] == []


@pytest.mark.parametrize(("path", "raw"), BAD_READS, ids=[f"{p}:{r[:50]}" for p, r in BAD_READS])
def test_hostile_reads_are_422(hostile: Hostile, path: str, raw: str) -> None:
    response = hostile.client.post(path, content=raw.encode(), headers={**JSON, **hostile.alice})

    assert_safe_error(response, 422)


def test_invalid_utf8_body_is_422(hostile: Hostile) -> None:
    raw = b'{"content": "caf\xe9"}'
    response = hostile.client.post("/v1/store", content=raw, headers={**JSON, **hostile.alice})

    assert_safe_error(response, 422)
    assert hostile.written() == 0


def test_a_422_never_echoes_the_input(hostile: Hostile) -> None:
    secret_words = "swordfish-" * 100_000  # a 1 MB unknown field
    response = hostile.client.post(
        "/v1/store",
        json={"content": "hi", secret_words[:80]: secret_words},
        headers=hostile.alice,
    )

    body = assert_safe_error(response, 422)
    assert "swordfish-" * 10 not in response.text
    assert body["detail"][0]["type"] == "extra_forbidden"


def test_a_422_with_an_unencodable_bad_value_still_answers(hostile: Hostile) -> None:
    # A typed field holding a lone surrogate: before the input policy, FastAPI's 422 echoed it
    # and the response could not be encoded (a 500).
    raw = '{"content": "hi", "event_time": "\\ud800"}'
    response = hostile.client.post(
        "/v1/store", content=raw.encode(), headers={**JSON, **hostile.alice}
    )

    assert_safe_error(response, 422)


def test_an_oversized_body_is_413_before_authentication(hostile: Hostile) -> None:
    limit = hostile.client.app.state.runtime.max_body_bytes  # type: ignore[attr-defined]
    big = json.dumps({"content": "x" * (limit + 10)}).encode()

    without_key = hostile.client.post("/v1/store", content=big, headers=JSON)
    with_key = hostile.client.post("/v1/store", content=big, headers={**JSON, **hostile.alice})

    assert_safe_error(without_key, 413)
    assert assert_safe_error(with_key, 413)["detail"].startswith("Request body larger than")
    assert hostile.written() == 0


def test_an_oversized_streamed_body_is_413_while_read(hostile: Hostile) -> None:
    """No Content-Length: the limit applies to the bytes as they arrive."""
    limit = hostile.client.app.state.runtime.max_body_bytes  # type: ignore[attr-defined]
    chunk = b"x" * 65_536
    sent = 0

    def body() -> Iterator[bytes]:
        nonlocal sent
        yield b'{"content": "'
        while sent < limit * 3:
            sent += len(chunk)
            yield chunk
        yield b'"}'

    response = hostile.client.post("/v1/store", content=body(), headers={**JSON, **hostile.alice})

    assert_safe_error(response, 413)
    assert hostile.written() == 0


def test_metadata_is_kept_exactly(hostile: Hostile) -> None:
    metadata = {
        "nested": {"list": [1, -2.5, 0.1, 1e-7, 9007199254740991, True, False, None, [], {}]},
        "unicode": "café ☕ 𝄞 \u200b inside metadata is data",
        "deep": json.loads(nested(30)),
        "zero": -0.0,
    }
    stored = hostile.client.post(
        "/v1/store", json={"content": "kept exactly", "metadata": metadata}, headers=hostile.alice
    )
    assert stored.status_code == 200, stored.text

    event = hostile.client.get(f"/v1/events/{stored.json()['event_id']}", headers=hostile.alice)

    assert event.status_code == 200
    assert event.json()["metadata"] == metadata


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "Application/JSON; charset=utf-8",
        "application/merge-patch+json",
        " application/json ; x=1",
    ],
)
def test_every_json_content_type_passes_the_policy(hostile: Hostile, content_type: str) -> None:
    """Whatever spelling FastAPI parses as JSON is checked first."""
    raw = b'{"content": "hi", "metadata": {"score": NaN}}'
    response = hostile.client.post(
        "/v1/store", content=raw, headers={"content-type": content_type, **hostile.alice}
    )

    assert_safe_error(response, 422)
    assert hostile.written() == 0
