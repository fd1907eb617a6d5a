"""LLM extractors against botocore's Stubber (Bedrock) and a real local HTTP server (OpenAI-compatible).

Both must keep only grounded artifacts and fail with a sanitized reason code, never provider text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import httpx
import pytest
from botocore.stub import ANY, Stubber

from prme.errors import ExtractionUnavailableError
from prme.extraction.bedrock import BedrockConverseExtractor
from prme.extraction.openai_compatible import OpenAiCompatibleExtractor
from prme.extraction.schema import SYSTEM_PROMPT
from prme.ports import Extractor

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"
REFERENCE = datetime(2024, 3, 10, 18, 0, tzinfo=UTC)
SOURCE = "I paid $1,200 for the new bike yesterday. My sister Ana works at Siemens."
PROVIDER_SECRET_TEXT = "internal-provider-detail-7f3a"
API_KEY = "sk-test-key-0123456789"

GOOD_ANSWER: dict[str, Any] = {
    "entities": [{"name": "Siemens", "kind": "organization", "evidence_quote": "works at Siemens"}],
    "claims": [
        {
            "statement": "I paid $1,200 for the new bike yesterday.",
            "subject": "I",
            "predicate": "paid",
            "object": "$1,200 for the new bike",
            "occurred_on": "2024-03-09",
            "evidence_quote": "I paid $1,200 for the new bike yesterday.",
        },
        {
            # Not in the source: a paraphrase the gate must drop.
            "statement": "I bought a car.",
            "subject": "I",
            "predicate": "bought",
            "object": "a car",
            "evidence_quote": "I bought a car.",
        },
    ],
    "quantities": [
        {
            "subject": "I",
            "predicate": "paid",
            "value": "1200",
            "unit": "$",
            "evidence_quote": "I paid $1,200",
        }
    ],
    "relationships": [
        {
            "source": "Ana",
            "relation": "works_at",
            "target": "Siemens",
            "evidence_quote": "Ana works at Siemens",
        }
    ],
}


def assert_good_extraction(extractor: Extractor) -> None:
    result = extractor.extract(SOURCE, reference_time=REFERENCE)

    assert result.extractor == extractor.name
    assert [c.predicate for c in result.claims] == ["paid"]
    assert result.claims[0].occurred_on == datetime(2024, 3, 9, tzinfo=UTC).date()
    assert [(q.value, q.unit) for q in result.quantities] == [(Decimal(1200), "$")]
    assert [e.name for e in result.entities] == ["Siemens"]
    assert [r.relation for r in result.relationships] == ["works_at"]


# Bedrock Converse


def converse_response(text: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 10, "outputTokens": 10, "totalTokens": 20},
        "metrics": {"latencyMs": 5},
    }


@pytest.fixture
def bedrock() -> Iterator[tuple[BedrockConverseExtractor, Stubber]]:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stub:
        yield BedrockConverseExtractor(client, MODEL_ID, max_tokens=512), stub
        stub.assert_no_pending_responses()


def expect_converse(stub: Stubber, text: str) -> None:
    stub.add_response(
        "converse",
        converse_response(text),
        {
            "modelId": MODEL_ID,
            "system": [{"text": SYSTEM_PROMPT}],
            "messages": ANY,
            "inferenceConfig": {"maxTokens": 512, "temperature": 0},
        },
    )


def test_bedrock_keeps_grounded_artifacts_and_drops_the_rest(
    bedrock: tuple[BedrockConverseExtractor, Stubber],
) -> None:
    extractor, stub = bedrock
    expect_converse(stub, json.dumps(GOOD_ANSWER))

    assert_good_extraction(extractor)
    assert extractor.name == f"bedrock/{MODEL_ID}"


def test_bedrock_sends_the_reference_time_and_the_source(
    bedrock: tuple[BedrockConverseExtractor, Stubber],
) -> None:
    extractor, stub = bedrock
    seen: list[dict[str, Any]] = []
    stub.add_response("converse", converse_response(json.dumps(GOOD_ANSWER)))
    stub.client.meta.events.register(
        "provide-client-params.bedrock-runtime.Converse",
        lambda params, **_: seen.append(params),
    )

    extractor.extract(SOURCE, reference_time=REFERENCE)

    (prompt,) = seen[0]["messages"][0]["content"]
    assert REFERENCE.isoformat() in prompt["text"]
    assert SOURCE in prompt["text"]


def test_bedrock_accepts_code_fenced_json(
    bedrock: tuple[BedrockConverseExtractor, Stubber],
) -> None:
    extractor, stub = bedrock
    expect_converse(stub, f"```json\n{json.dumps(GOOD_ANSWER, indent=2)}\n```")

    assert_good_extraction(extractor)


def test_bedrock_non_json_answer_is_invalid_output(
    bedrock: tuple[BedrockConverseExtractor, Stubber],
) -> None:
    extractor, stub = bedrock
    expect_converse(stub, f"Sure! Here is what I found: {PROVIDER_SECRET_TEXT}")

    with pytest.raises(ExtractionUnavailableError) as caught:
        extractor.extract(SOURCE, reference_time=REFERENCE)

    assert caught.value.reason_code == "InvalidOutput"
    assert PROVIDER_SECRET_TEXT not in str(caught.value)


def test_bedrock_schema_violation_is_invalid_output(
    bedrock: tuple[BedrockConverseExtractor, Stubber],
) -> None:
    extractor, stub = bedrock
    expect_converse(stub, json.dumps({"claims": [{"statement": PROVIDER_SECRET_TEXT}]}))

    with pytest.raises(ExtractionUnavailableError) as caught:
        extractor.extract(SOURCE, reference_time=REFERENCE)

    assert caught.value.reason_code == "InvalidOutput"
    assert PROVIDER_SECRET_TEXT not in str(caught.value)


def test_bedrock_throttling_is_a_sanitized_provider_error(
    bedrock: tuple[BedrockConverseExtractor, Stubber],
) -> None:
    extractor, stub = bedrock
    stub.add_client_error(
        "converse",
        service_error_code="ThrottlingException",
        service_message=PROVIDER_SECRET_TEXT,
        http_status_code=429,
    )

    with pytest.raises(ExtractionUnavailableError) as caught:
        extractor.extract(SOURCE, reference_time=REFERENCE)

    assert caught.value.reason_code == "ProviderError"
    assert PROVIDER_SECRET_TEXT not in str(caught.value)
    assert PROVIDER_SECRET_TEXT not in caught.value.detail


def test_bedrock_skips_the_call_for_blank_text(
    bedrock: tuple[BedrockConverseExtractor, Stubber],
) -> None:
    extractor, _ = bedrock

    assert extractor.extract("  \n", reference_time=REFERENCE).claims == ()


# OpenAI-compatible chat completions against a real local server


@dataclass
class StubServer:
    base_url: str
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


def completion(content: str) -> bytes:
    return json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": content}}]}
    ).encode()


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    state = StubServer(base_url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            state.requests.append((self.path, dict(self.headers.items()), body))
            mode = self.path.split("/")[1]
            if mode == "slow":
                # Waits past the client's timeout; teardown releases it at once.
                state.release.wait(5)
            status, payload = {
                "good": (200, completion(json.dumps(GOOD_ANSWER))),
                "slow": (200, completion(json.dumps(GOOD_ANSWER))),
                "broken": (500, f'{{"error": "{PROVIDER_SECRET_TEXT}"}}'.encode()),
                "prose": (200, completion(f"I think {PROVIDER_SECRET_TEXT}")),
                "garbage": (200, b"<html>not json</html>"),
            }[mode]
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test); nothing to answer

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    # A bound on the server's life even if teardown never runs (interrupted session).
    watchdog = threading.Timer(60, server.shutdown)
    watchdog.daemon = True
    watchdog.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        state.release.set()
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def http_client() -> Iterator[httpx.Client]:
    with httpx.Client() as client:
        yield client


def openai_extractor(
    http_client: httpx.Client, server: StubServer, mode: str
) -> OpenAiCompatibleExtractor:
    return OpenAiCompatibleExtractor(
        http_client, f"{server.base_url}/{mode}/", "local-model", API_KEY, timeout_s=0.5
    )


def test_openai_compatible_good_answer_sends_the_key_only_in_the_header(
    http_client: httpx.Client, stub_server: StubServer
) -> None:
    extractor = openai_extractor(http_client, stub_server, "good")

    assert_good_extraction(extractor)

    ((path, headers, body),) = stub_server.requests
    assert path == "/good/chat/completions"
    assert headers["Authorization"] == f"Bearer {API_KEY}"
    assert body["model"] == "local-model"
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert REFERENCE.isoformat() in body["messages"][1]["content"]
    assert API_KEY not in json.dumps(body)
    assert API_KEY not in repr(extractor)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("broken", "ProviderError"),
        ("prose", "InvalidOutput"),
        ("garbage", "InvalidOutput"),
        ("slow", "Timeout"),
    ],
)
def test_openai_compatible_failures_are_sanitized(
    http_client: httpx.Client, stub_server: StubServer, mode: str, reason: str
) -> None:
    extractor = openai_extractor(http_client, stub_server, mode)

    with pytest.raises(ExtractionUnavailableError) as caught:
        extractor.extract(SOURCE, reference_time=REFERENCE)

    assert caught.value.reason_code == reason
    assert API_KEY not in str(caught.value)
    assert PROVIDER_SECRET_TEXT not in str(caught.value)
    assert stub_server.requests[0][1]["Authorization"] == f"Bearer {API_KEY}"


def test_openai_compatible_unreachable_server_is_a_provider_error(
    http_client: httpx.Client,
) -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]
    extractor = OpenAiCompatibleExtractor(
        http_client, f"http://127.0.0.1:{port}", "m", API_KEY, timeout_s=0.5
    )

    with pytest.raises(ExtractionUnavailableError) as caught:
        extractor.extract(SOURCE, reference_time=REFERENCE)

    assert caught.value.reason_code == "ProviderError"
    assert API_KEY not in str(caught.value)
