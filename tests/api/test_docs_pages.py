"""`/docs` and `/redoc` load every script, style and icon from the server itself: the pages
work without internet access and leak no visit to a CDN."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime

# src= and href= attributes and url: '...' settings: every address a page makes the browser load.
ADDRESS = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\s*:\s*["']([^"']+)["']""")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    backend = open_embedded(tmp_path / "data", embedder=HashingEmbedder())
    app = create_app(
        ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=AuthPolicy())
    )
    try:
        with TestClient(app) as test_client:
            yield test_client
    finally:
        backend.close()


@pytest.mark.parametrize(("page", "scripts"), [("/docs", 1), ("/redoc", 1)])
def test_page_loads_only_local_assets_and_each_is_served(
    client: TestClient, page: str, scripts: int
) -> None:
    html = client.get(page)
    assert html.status_code == 200
    addresses = [a or b for a, b in ADDRESS.findall(html.text)]
    assert len([a for a in addresses if a.endswith(".js")]) == scripts
    assert "/openapi.json" in addresses or "/openapi.json" in html.text
    for address in addresses:
        assert address.startswith("/"), f"{page} loads {address} from another host"
        assert not address.startswith("//"), f"{page} loads {address} from another host"
        loaded = client.get(address)
        assert loaded.status_code == 200, address
        assert len(loaded.content) > 0, address
    # Nothing else in the page names another host (fonts, CDN fallbacks).
    assert "https://" not in html.text


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_pages_cannot_be_framed_or_send_anything_elsewhere(
    client: TestClient, page: str
) -> None:
    # They share the inspector's origin and so the key a signed-in tab keeps.
    headers = client.get(page).headers
    policy = headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    assert "connect-src 'self'" in policy
    assert "object-src 'none'" in policy
    assert headers["x-frame-options"] == "DENY"
