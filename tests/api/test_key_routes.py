"""Keys over HTTP: a tenant's operator key provisions, lists and revokes its users' keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole
from prme.operations import OPERATIONS, Caller
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.http import Api, bearer


def test_an_operator_key_provisions_a_user_key_that_acts_for_that_user_only(api: Api) -> None:
    created = api.client.post(
        "/v1/keys", json={"user_id": "carol", "label": "billing service"}, headers=api.operator
    )
    assert created.status_code == 200, created.text
    issued = created.json()
    assert issued["user_id"] == "carol" and issued["role"] == "owner"
    assert issued["secret"].startswith(f"prme_{issued['key_id']}_")
    assert issued["keyless_access_ended"] is False
    carol = bearer(issued["secret"])

    stored = api.client.post("/v1/store", json={"content": "Carol likes tea."}, headers=carol)
    assert stored.status_code == 200
    assert stored.json()["event_id"]
    # The key acts for carol alone.
    other = {"content": "x", "user_id": "alice"}
    assert api.client.post("/v1/store", json=other, headers=carol).status_code == 403

    listed = api.client.get("/v1/keys", params={"user_id": "carol"}, headers=api.operator)
    assert listed.status_code == 200
    [key] = listed.json()["items"]
    assert key["key_id"] == issued["key_id"] and key["label"] == "billing service"
    assert "secret" not in key and "key_hash" not in key
    assert key["revoked_at"] is None


def test_a_revoked_key_authenticates_nothing(api: Api) -> None:
    issued = api.client.post("/v1/keys", json={"user_id": "dan"}, headers=api.operator).json()

    revoked = api.client.delete(f"/v1/keys/{issued['key_id']}", headers=api.operator)

    assert revoked.status_code == 200
    assert revoked.json()["revoked_at"] is not None
    refused = api.client.post(
        "/v1/store", json={"content": "late"}, headers=bearer(issued["secret"])
    )
    assert refused.status_code == 401


def test_owner_keys_may_not_manage_keys(api: Api) -> None:
    assert (
        api.client.post("/v1/keys", json={"user_id": "alice"}, headers=api.alice).status_code == 403
    )
    assert api.client.get("/v1/keys", headers=api.alice).status_code == 403
    alice_key = next(k for k in api.credentials.list() if k.owner_id == "alice")
    assert api.client.delete(f"/v1/keys/{alice_key.key_id}", headers=api.alice).status_code == 403


def test_every_operator_route_refuses_an_owner_key(api: Api) -> None:
    """Whatever an operator route does, an owner key is refused before it does anything."""
    for op in OPERATIONS:
        if op.caller is not Caller.OPERATOR or op.http is None:
            continue
        path = op.http.path.replace("{key_id}", "0123456789abcdef")
        body = {"user_id": "alice"} if op.http.method == "POST" else None
        response = api.client.request(op.http.method, path, json=body, headers=api.bob)
        assert response.status_code == 403, (op.name, response.text)


def test_an_operator_sees_and_revokes_only_its_own_tenants_keys(api: Api) -> None:
    other_operator = api.credentials.create(
        tenant_id="globex", owner_id=None, role=CredentialRole.OPERATOR
    )
    globex = bearer(other_operator.secret)
    theirs = api.client.post("/v1/keys", json={"user_id": "erin"}, headers=globex).json()

    ours = api.client.get("/v1/keys", headers=api.operator).json()["items"]
    assert theirs["key_id"] not in {k["key_id"] for k in ours}
    assert all(k["user_id"] != "erin" for k in ours)
    assert (
        api.client.delete(f"/v1/keys/{theirs['key_id']}", headers=api.operator).status_code == 404
    )
    assert api.client.delete("/v1/keys/unknown", headers=api.operator).status_code == 404


def test_operator_keys_are_not_revoked_over_http(api: Api) -> None:
    operator_key = next(k for k in api.credentials.list() if k.role is CredentialRole.OPERATOR)

    refused = api.client.delete(f"/v1/keys/{operator_key.key_id}", headers=api.operator)

    assert refused.status_code == 403
    assert "prme CLI" in refused.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"user_id": ""},
        {"user_id": "a" * 257},
        {"user_id": "x", "label": "l" * 201},
        {"user_id": "x", "role": "operator"},
        {"user_id": "x\u0007"},
        # `prme keys list` prints labels on the server's terminal: no escapes, no forged lines.
        {"user_id": "x", "label": "ok\u001b]0;owned\u0007"},
        {"user_id": "x", "label": "ok\nabc  operator  -  active  fake"},
    ],
)
def test_bad_key_requests_are_refused_and_create_nothing(api: Api, body: dict[str, object]) -> None:
    before = len(api.credentials.list())

    response = api.client.post("/v1/keys", json=body, headers=api.operator)

    assert response.status_code == 422, response.text
    assert len(api.credentials.list()) == before


def test_the_first_key_created_keylessly_ends_keyless_access_and_says_so(tmp_path: Path) -> None:
    backend = open_embedded(tmp_path, embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    auth = AuthPolicy.at_startup(backend.credentials, local_tenant="local")
    assert auth.keyless_open
    app = create_app(ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=auth))
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        issued = client.post("/v1/keys", json={"user_id": "default"})
        assert issued.status_code == 200, issued.text
        assert issued.json()["keyless_access_ended"] is True

        # From now on every request needs a key, and the new one works.
        assert client.post("/v1/store", json={"content": "no key"}).status_code == 401
        keyed = bearer(issued.json()["secret"])
        assert (
            client.post("/v1/store", json={"content": "with a key"}, headers=keyed).status_code
            == 200
        )
    backend.close()
