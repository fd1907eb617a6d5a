"""The API function under Lambda's own limits: 6 MB each way and the function's timeout.

Every call goes through `lambda_limits.invoke`, which answers as API Gateway would when Lambda
refuses an event or a response (a 500), so a response that outgrows the limit fails here too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.limits import LAMBDA_MARGIN_MS
from prme.engine.deadlines import PASS_SHARE_OF_DEADLINE
from prme.model.input_policy import LAMBDA_MAX_BODY_BYTES, LAMBDA_PAYLOAD_BYTES
from prme.model.inputs import RetrieveInput, StoreInput
from prme.settings import Settings
from tests.harness.lambda_events import ALICE, Deployed, FakeLambdaContext
from tests.harness.lambda_limits import Invocation, api_event, invoke

pytestmark = pytest.mark.slow

# The reproduction: 80 records of 99k characters, retrieved with limit=80 (7.74 MB).
RECORDS = 80
RECORD_CHARS = 99_000
# Every kind of character that grows when escaped: a quote or backslash (4 bytes on the wire),
# controls (3 to 7), DEL, CJK (6) and an emoji (12).
WORST_CASE_TEXT = '"\\\x01\x1f\n\t\x7f中文字😀🙂 '


def _post(deployed: Deployed, path: str, body: dict[str, Any]) -> Invocation:
    from functions import api

    raw = json.dumps(body).encode()
    return invoke(api.handler, api_event(path, raw, key=deployed.alice_key))


def _mcp_call(deployed: Deployed, tool: str, arguments: dict[str, Any]) -> Invocation:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return _post(deployed, "/mcp", call)


def _store_all(contents: list[str], **fields: Any) -> None:
    """Stored, then made searchable at once whether or not the function refreshes on write."""
    from functions import runtime
    from prme.backends.aws.opensearch_index import build_opensearch_client

    engine = runtime.backend().engine
    for content in contents:
        engine.store(ALICE, StoreInput(content=content, **fields))
    current = runtime.settings()
    assert current.opensearch_url is not None
    client = build_opensearch_client(current.opensearch_url, auth="none", region=None)
    try:
        client.indices.refresh(index=current.opensearch_index_alias)
    finally:
        client.close()


def _large_records() -> list[str]:
    # Words only at the start: the test embedder hashes every word in pure Python, and
    # 80 x 99k characters of words would cost it about ten seconds.
    return [
        (f"record {i}: the ships came in at dawn " + "~-" * RECORD_CHARS)[:RECORD_CHARS]
        for i in range(RECORDS)
    ]


def _assert_cut_to_ranked_prefix(reply: dict[str, Any], full: list[str], limit_left: int) -> None:
    """The records returned are the best-ranked ones, and the rest are counted as left out."""
    returned = [r["node_id"] for r in reply["results"]]
    assert 0 < len(returned) < len(full)
    assert returned == full[: len(returned)]
    assert reply["size_limit"]["reason"] == "response_size"
    assert reply["size_limit"]["omitted"] == limit_left - len(returned)


def test_retrieve_of_80_large_records_fits_lambda_through_rest_and_mcp(
    deployed: Deployed,
) -> None:
    """Given the issue's 80 records of 99k characters, when a caller asks for all 80 through
    /v1/retrieve and through MCP, then each answer is a 200 under 6 MB that keeps the best
    records and says how many were left out, never API Gateway's 500."""
    from functions import runtime

    _store_all(_large_records())
    query = {"query": "ships in the harbour at dawn", "limit": RECORDS}
    ranked = runtime.backend().engine.retrieve(ALICE, RetrieveInput.model_validate(query))
    full = [r.node_id for r in ranked.results]
    assert len(full) == RECORDS

    rest = _post(deployed, "/v1/retrieve", query)
    assert rest.delivered and rest.status == 200
    assert rest.response_bytes is not None and rest.response_bytes <= LAMBDA_PAYLOAD_BYTES
    reply = rest.json()
    _assert_cut_to_ranked_prefix(reply, full, RECORDS)
    excluded = {e["node_id"] for e in reply["bundle"]["excluded"] if e["reason"] == "response_size"}
    assert excluded == set(full[len(reply["results"]) :])

    mcp = _mcp_call(deployed, "memory_retrieve", query)
    assert mcp.delivered and mcp.status == 200
    assert mcp.response_bytes is not None and mcp.response_bytes <= LAMBDA_PAYLOAD_BYTES
    result = mcp.json()["result"]
    assert not result.get("isError")
    _assert_cut_to_ranked_prefix(result["structuredContent"], full, RECORDS)


@pytest.mark.parametrize("context_format", ["reader", "auditable"])
def test_worst_case_escaping_content_stays_under_the_limit(
    deployed: Deployed, context_format: str
) -> None:
    """Records made only of characters that grow when escaped (quotes, backslashes, controls,
    CJK, emoji), in the results, the context and the metadata, still answer under 6 MB."""
    repeat = RECORD_CHARS // len(WORST_CASE_TEXT)
    contents = [f"{i} {WORST_CASE_TEXT * repeat}" for i in range(10)]
    metadata = {'k"\\😀': (WORST_CASE_TEXT * 400)[:3_000]}
    _store_all(contents, speaker='Ann "中" \\😀', session_id='s\\"😀', metadata=metadata)
    query = {
        "query": "中文字 😀",
        "limit": len(contents),
        "token_budget": 200_000,
        "context_format": context_format,
    }

    rest = _post(deployed, "/v1/retrieve", query)
    assert rest.delivered and rest.status == 200
    assert rest.response_bytes is not None and rest.response_bytes <= LAMBDA_PAYLOAD_BYTES
    assert rest.json()["size_limit"]["omitted"] > 0

    arguments = {k: v for k, v in query.items() if k != "context_format"}
    mcp = _mcp_call(deployed, "memory_retrieve", arguments)
    assert mcp.delivered and mcp.status == 200
    assert mcp.response_bytes is not None and mcp.response_bytes <= LAMBDA_PAYLOAD_BYTES
    assert mcp.json()["result"]["structuredContent"]["size_limit"]["omitted"] > 0


@pytest.fixture
def stack_body_limit(deployed: Deployed, monkeypatch: pytest.MonkeyPatch) -> Deployed:
    """The api function's body limit as the stack sets it (infra/components/workers.py)."""
    from functions import api, runtime

    monkeypatch.setenv(Settings.env_name("max_body_bytes"), str(LAMBDA_MAX_BODY_BYTES))
    runtime.settings.cache_clear()
    api._adapter.cache_clear()
    return deployed


def _function_body_limit() -> int:
    from functions import runtime

    return runtime.settings().max_body_bytes


def test_a_body_over_the_functions_limit_gets_413_json(stack_body_limit: Deployed) -> None:
    from functions import api

    oversized = b'{"content": "' + b"x" * _function_body_limit() + b'"}'
    answer = invoke(api.handler, api_event("/v1/store", oversized, key=stack_body_limit.alice_key))
    assert answer.delivered
    assert answer.status == 413
    assert "larger than" in answer.json()["detail"]


@pytest.mark.parametrize(
    ("content_type", "character"),
    [("application/json", "😀"), ("application/json", '\\"'), ("application/octet-stream", "x")],
)
def test_every_body_the_function_accepts_reaches_it(
    stack_body_limit: Deployed, content_type: str, character: str
) -> None:
    """A body of the largest accepted size, of the characters that grow most in the event
    (escaped inside the event's JSON, or base64 for a non-text type), is still delivered: the
    function answers it (here 422: too long for a memory) instead of API Gateway's 500."""
    from functions import api

    limit = _function_body_limit()
    frame = b'{"content": ""}'
    unit = character.encode()
    filler = unit * ((limit - len(frame)) // len(unit))
    body = b'{"content": "' + filler + b'"}'
    assert limit - len(unit) < len(body) <= limit
    event = api_event("/v1/store", body, key=stack_body_limit.alice_key, content_type=content_type)
    answer = invoke(api.handler, event)
    assert answer.delivered, f"event of {answer.event_bytes} bytes"
    assert (
        answer.status == 422
        if content_type == "application/json"
        else answer.status
        in {
            415,
            422,
        }
    )


def test_a_request_over_lambdas_payload_never_reaches_the_function(deployed: Deployed) -> None:
    """What no code of ours can change: API Gateway accepts bodies up to 10 MB and answers 500
    when the event is over Lambda's 6 MB (documented in docs/deployment.md, Limits)."""
    from functions import api

    body = b'{"content": "' + b"x" * (7 * 1024 * 1024) + b'"}'
    answer = invoke(api.handler, api_event("/v1/store", body, key=deployed.alice_key))
    assert not answer.delivered
    assert answer.status == 500


def test_budget_ms_over_the_functions_time_is_lowered_and_said(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given a function with 30 s left, when a caller asks a processing pass for 900 s (REST)
    or 60 s (MCP), then the pass gets its share of the time left and the answer says so."""
    from functions import runtime

    # The processing tool is outside the default MCP tools; the app is built on first call.
    monkeypatch.setenv("PRME_MCP_TOOLS", "full")
    runtime.settings.cache_clear()
    left_ms = FakeLambdaContext().get_remaining_time_in_millis() - LAMBDA_MARGIN_MS
    share_ms = int(left_ms * PASS_SHARE_OF_DEADLINE)

    rest = _post(deployed, "/v1/materializations/process", {"budget_ms": 900_000})
    assert rest.status == 200
    report = rest.json()
    assert 0 < report["budget_ms"] <= share_ms
    assert report["budget_lowered"] is True

    rest = _post(deployed, "/v1/extractions/process", {"budget_ms": 900_000})
    assert rest.json()["budget_ms"] <= share_ms

    mcp = _mcp_call(deployed, "memory_process_materializations", {"budget_ms": 60_000})
    structured = mcp.json()["result"]["structuredContent"]
    assert 0 < structured["budget_ms"] <= share_ms
    assert structured["budget_lowered"] is True

    small = _post(deployed, "/v1/materializations/process", {"budget_ms": 1_000})
    assert small.json()["budget_ms"] == 1_000
    assert small.json()["budget_lowered"] is False
