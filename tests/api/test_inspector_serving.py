"""`/ui` serves the inspector's packaged files and nothing else, each with the strict
Content-Security-Policy; the files hold no data, and the API behind them keeps its keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.http.inspector import CONTENT_SECURITY_POLICY, inspector_assets
from prme.model.enums import CredentialRole


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    backend = open_embedded(tmp_path / "data", embedder=HashingEmbedder())
    backend.credentials.create(tenant_id="local", owner_id="alice", role=CredentialRole.OWNER)
    app = create_app(
        ApiRuntime(
            engine=backend.engine,
            credentials=backend.credentials,
            auth=AuthPolicy.at_startup(backend.credentials, local_tenant="local"),
        )
    )
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as test_client:
            yield test_client
    finally:
        backend.close()


def test_ui_redirects_to_the_page_which_carries_the_policy(client: TestClient) -> None:
    redirect = client.get("/ui", follow_redirects=False)
    assert redirect.status_code == 307
    assert redirect.headers["location"] == "/ui/"
    page = client.get("/ui/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert 'src="js/app.js"' in page.text


def test_every_packaged_asset_is_served_with_its_type_and_the_policy(client: TestClient) -> None:
    types = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
    for name in inspector_assets():
        response = client.get(f"/ui/{name}")
        assert response.status_code == 200, name
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        suffix = "." + name.rsplit(".", 1)[-1]
        if suffix in types:
            assert response.headers["content-type"].startswith(types[suffix]), name


@pytest.mark.parametrize(
    "path",
    [
        "/ui/missing.js",
        "/ui/%2e%2e/http/app.py",
        "/ui/js/%2e%2e/%2e%2e/__init__.py",
        "/ui/..%2f..%2fpyproject.toml",
        "/ui/js/../../../../../../etc/passwd",
        "/ui/__init__.py",
        "/ui/static/index.html",
    ],
)
def test_nothing_outside_the_packaged_assets_is_served(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert b"import" not in response.content
    assert b"root:" not in response.content


def test_the_pages_are_not_api_operations(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if path.startswith("/ui")]


def test_the_data_behind_the_pages_still_needs_a_key(client: TestClient) -> None:
    assert client.get("/ui/").status_code == 200
    assert client.get("/v1/stats").status_code == 401


def test_keyless_local_pages_refuse_a_rebound_host(tmp_path: Path) -> None:
    backend = open_embedded(tmp_path / "keyless", embedder=HashingEmbedder())
    app = create_app(
        ApiRuntime(
            engine=backend.engine,
            credentials=backend.credentials,
            auth=AuthPolicy.at_startup(backend.credentials, local_tenant="local"),
        )
    )
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as local:
            assert local.get("/ui/").status_code == 200
            rebound = local.get("/ui/", headers={"host": "attacker.example"})
            assert rebound.status_code in (400, 403, 421)
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/ui", 307),
        ("POST", "/ui/", 405),
        ("PUT", "/ui/js/app.js", 405),
        ("DELETE", "/ui", 405),
        ("OPTIONS", "/ui/", 405),
    ],
)
def test_redirects_and_refusals_under_ui_carry_the_policy_too(
    client: TestClient, method: str, path: str, status: int
) -> None:
    # Answers the router or the error handlers make, not the asset routes: a browser may
    # render or frame any of them.
    response = client.request(method, path, follow_redirects=False)

    assert response.status_code == status
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
