"""The Bedrock embedder against botocore's Stubber: request shape, normalisation, sanitized errors."""

from __future__ import annotations

import io
import json
import threading
import time
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from prme.embedding.bedrock import BedrockEmbedder
from prme.errors import EmbeddingUnavailableError

MODEL = "amazon.titan-embed-text-v2:0"


def body(payload: dict[str, object]) -> StreamingBody:
    raw = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def client_and_stub() -> tuple[object, Stubber]:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    return client, Stubber(client)


def test_one_call_per_text_with_dimension_and_normalised_output() -> None:
    client, stub = client_and_stub()
    for vector in ([3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]):
        stub.add_response(
            "invoke_model",
            {"body": body({"embedding": vector}), "contentType": "application/json"},
            {
                "modelId": MODEL,
                "body": ANY,
                "contentType": "application/json",
                "accept": "application/json",
            },
        )
    with stub:
        # Sequential: the Stubber hands out its responses in call order.
        vectors = BedrockEmbedder(client, MODEL, 4, max_concurrency=1).embed(["first", "second"])
    assert vectors.shape == (2, 4)
    assert np.allclose(vectors[0], [0.6, 0.8, 0.0, 0.0])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    stub.assert_no_pending_responses()


def test_request_names_the_configured_dimension() -> None:
    client, stub = client_and_stub()
    seen: list[dict[str, object]] = []

    def capture(params: dict[str, object], **_: object) -> None:
        seen.append(json.loads(str(params["body"])))

    client.meta.events.register("before-parameter-build.bedrock-runtime.InvokeModel", capture)  # type: ignore[attr-defined]
    stub.add_response(
        "invoke_model",
        {"body": body({"embedding": [1.0] * 256}), "contentType": "application/json"},
    )
    with stub:
        BedrockEmbedder(client, MODEL, 256).embed(["hello"])
    assert seen == [{"inputText": "hello", "dimensions": 256, "normalize": True}]


@pytest.mark.parametrize(
    "error_code", ["ThrottlingException", "AccessDeniedException", "ValidationException"]
)
def test_provider_errors_become_a_sanitized_embedding_error(error_code: str) -> None:
    client, stub = client_and_stub()
    stub.add_client_error(
        "invoke_model", service_error_code=error_code, service_message="secret provider text"
    )
    with stub, pytest.raises(EmbeddingUnavailableError) as raised:
        BedrockEmbedder(client, MODEL, 4).embed(["x"])
    assert "secret provider text" not in str(raised.value)


def test_wrong_dimension_is_refused() -> None:
    client, stub = client_and_stub()
    stub.add_response(
        "invoke_model", {"body": body({"embedding": [1.0, 2.0]}), "contentType": "application/json"}
    )
    with stub, pytest.raises(EmbeddingUnavailableError):
        BedrockEmbedder(client, MODEL, 4).embed(["x"])


def test_model_identity_names_the_bedrock_model() -> None:
    client, _ = client_and_stub()
    info = BedrockEmbedder(client, MODEL, 1024).model
    assert (info.name, info.dimension) == (MODEL, 1024)


class SlowTitan:
    """A stand-in for the bedrock-runtime client: each request takes 50 ms and answers a
    vector naming its input, so order and overlap can be checked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0

    def invoke_model(self, **request: Any) -> dict[str, Any]:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.05)
        text = json.loads(request["body"])["inputText"]
        with self.lock:
            self.in_flight -= 1
        if text == "refused":
            from botocore.exceptions import ClientError

            error = {"Error": {"Code": "ThrottlingException", "Message": "secret provider text"}}
            raise ClientError(error, "InvokeModel")
        return {"body": body({"embedding": [float(len(text)), 1.0, 0.0, 0.0]})}


def test_the_texts_of_one_call_are_requested_concurrently_and_kept_in_order() -> None:
    titan = SlowTitan()
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = BedrockEmbedder(titan, MODEL, 4, max_concurrency=4).embed(texts)
    assert titan.most_in_flight == 4
    expected = np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected)


def test_a_failed_request_among_concurrent_ones_fails_the_call_sanitized() -> None:
    titan = SlowTitan()
    with pytest.raises(EmbeddingUnavailableError) as raised:
        BedrockEmbedder(titan, MODEL, 4).embed(["fine", "refused", "fine too"])
    assert "secret provider text" not in str(raised.value)


def test_max_concurrency_must_be_positive() -> None:
    client, _ = client_and_stub()
    with pytest.raises(ValueError, match="max_concurrency"):
        BedrockEmbedder(client, MODEL, 4, max_concurrency=0)
