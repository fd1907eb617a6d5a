"""The Bedrock embedder against botocore's Stubber: request shape, normalisation, sanitized errors."""

from __future__ import annotations

import io
import json

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
        vectors = BedrockEmbedder(client, MODEL, 4).embed(["first", "second"])
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
