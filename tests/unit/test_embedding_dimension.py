"""The search index's vector dimension comes from one function of the embedder setting; each
embedder the settings can build agrees with it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from prme.composition import build_embedder
from prme.settings import EmbedderName, Settings

# The Bedrock embedder builds its boto3 client (no request) when it is made.
pytestmark = pytest.mark.usefixtures("aws_region")


@pytest.fixture
def aws_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.mark.parametrize("embedder", ["minilm", "hashing", "bedrock"])
def test_each_embedder_makes_vectors_of_the_dimension_its_setting_names(
    embedder: EmbedderName,
) -> None:
    settings = Settings(embedder=embedder)

    assert build_embedder(settings).model.dimension == settings.embedding_dimension


@pytest.mark.parametrize("dimension", [256, 512, 1024])
def test_titan_v2_dimension_follows_its_environment_variable(
    dimension: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As the stack sets it: text in the function's environment.
    monkeypatch.setenv("PRME_EMBEDDER", "bedrock")
    monkeypatch.setenv("PRME_BEDROCK_EMBEDDING_DIMENSION", str(dimension))
    settings = Settings()

    assert settings.embedding_dimension == dimension
    assert build_embedder(settings).model.dimension == dimension


def test_a_dimension_titan_v2_cannot_make_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRME_BEDROCK_EMBEDDING_DIMENSION", "384")

    with pytest.raises(ValidationError):
        Settings()
