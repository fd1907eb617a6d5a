"""Who a call acts for: owner resolution, user_id rules, API keys and bearer parsing."""

from __future__ import annotations

import re

import pytest
from starlette.datastructures import Headers
from starlette.requests import Request

from prme.backends.clock import ManualClock
from prme.backends.memory import InMemoryCredentialStore
from prme.engine.credentials import KEY_PREFIX, CredentialService, hash_api_key
from prme.engine.identity import MAX_USER_ID_CHARS, Principal, resolve_owner, validate_user_id
from prme.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
)
from prme.http.auth import (
    AuthPolicy,
    authenticate,
    bearer_token,
    require_loopback_request,
)
from prme.model.enums import CredentialRole
from prme.model.records import OwnerKey

ALICE_KEY = Principal.owner("t1", "alice", key_id="k1")
OPERATOR = Principal.operator("t1", key_id="k2")


def test_an_owner_key_acts_for_its_own_owner_only() -> None:
    alice = OwnerKey(tenant_id="t1", owner_id="alice")
    assert resolve_owner(ALICE_KEY, None) == alice
    assert resolve_owner(ALICE_KEY, "alice") == alice
    for other in ("bob", "Alice", "alice ", ""):
        with pytest.raises(PermissionDeniedError):
            resolve_owner(ALICE_KEY, other)


def test_an_operator_names_the_owner_within_its_tenant() -> None:
    assert resolve_owner(OPERATOR, "bob") == OwnerKey(tenant_id="t1", owner_id="bob")
    with pytest.raises(InvalidRequestError, match="operator keys must name user_id"):
        resolve_owner(OPERATOR, None)
    with pytest.raises(InvalidRequestError):
        resolve_owner(OPERATOR, "bad\x00id")
    keyless = Principal.operator("local", default_owner_id="default")
    assert resolve_owner(keyless, None) == OwnerKey(tenant_id="local", owner_id="default")
    assert resolve_owner(keyless, "carol") == OwnerKey(tenant_id="local", owner_id="carol")


@pytest.mark.parametrize(
    "user_id",
    ["", " ", "\t", "x" * (MAX_USER_ID_CHARS + 1), "a\x1fb", "a\x7fb", "\x00", "a\ud800"],
)
def test_invalid_user_ids_are_refused(user_id: str) -> None:
    with pytest.raises(InvalidRequestError):
        validate_user_id(user_id)


@pytest.mark.parametrize("user_id", ["a", "x" * MAX_USER_ID_CHARS, "a b", "é~ ", "user@example"])
def test_valid_user_ids_pass_unchanged(user_id: str) -> None:
    assert validate_user_id(user_id) == user_id


def service() -> tuple[CredentialService, ManualClock]:
    clock = ManualClock()
    return CredentialService(InMemoryCredentialStore(), clock), clock


def test_a_key_authenticates_as_what_it_was_issued_for() -> None:
    credentials, clock = service()
    assert not credentials.any_active()
    owner_key = credentials.create(tenant_id="t1", owner_id="alice", role=CredentialRole.OWNER)
    operator_key = credentials.create(tenant_id="t1", owner_id=None, role=CredentialRole.OPERATOR)
    assert credentials.any_active()
    # The unsalted hash is safe only for long random secrets: a 16-hex key id and 256 bits.
    key_id = owner_key.credential.key_id
    assert re.fullmatch(rf"{KEY_PREFIX}{key_id}_[A-Za-z0-9_-]{{43}}", owner_key.secret)
    assert re.fullmatch(r"[0-9a-f]{16}", key_id)
    assert owner_key.credential.key_hash == hash_api_key(owner_key.secret)
    assert owner_key.secret not in owner_key.credential.model_dump_json()
    assert credentials.authenticate(owner_key.secret) == Principal.owner(
        "t1", "alice", owner_key.credential.key_id
    )
    assert credentials.authenticate(operator_key.secret) == Principal.operator(
        "t1", operator_key.credential.key_id
    )
    clock.advance(seconds=5)
    revoked = credentials.revoke(owner_key.credential.key_id)
    assert revoked.revoked_at == clock.now()
    with pytest.raises(AuthenticationError):
        credentials.authenticate(owner_key.secret)
    assert credentials.any_active()
    credentials.revoke(operator_key.credential.key_id)
    assert not credentials.any_active()
    assert {c.key_id for c in credentials.list("t1")} == {
        owner_key.credential.key_id,
        operator_key.credential.key_id,
    }


@pytest.mark.parametrize("secret", [None, "", "prme_unknown", "x"])
def test_missing_or_unknown_keys_do_not_authenticate(secret: str | None) -> None:
    credentials, _ = service()
    credentials.create(tenant_id="t1", owner_id="alice", role=CredentialRole.OWNER)
    with pytest.raises(AuthenticationError):
        credentials.authenticate(secret)


def test_a_key_names_its_owner_exactly_when_it_is_an_owner_key() -> None:
    credentials, _ = service()
    with pytest.raises(ValueError, match="owner key needs an owner"):
        credentials.create(tenant_id="t1", owner_id=None, role=CredentialRole.OWNER)
    with pytest.raises(ValueError, match="names no owner"):
        credentials.create(tenant_id="t1", owner_id="alice", role=CredentialRole.OPERATOR)
    with pytest.raises(InvalidRequestError):
        credentials.create(tenant_id="t1", owner_id=" ", role=CredentialRole.OWNER)
    with pytest.raises(NotFoundError):
        credentials.revoke("no-such-key")
    assert credentials.list(None) == []


def request_with(authorization: str | None) -> Request:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers})


@pytest.mark.parametrize(
    ("header", "token"),
    [(None, None), ("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("BEARER x_y", "x_y")],
)
def test_bearer_tokens_are_read_from_the_authorization_header(
    header: str | None, token: str | None
) -> None:
    assert bearer_token(request_with(header)) == token


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer   ", "abc", "Token abc"])
def test_other_authorization_schemes_are_refused(header: str) -> None:
    with pytest.raises(AuthenticationError):
        bearer_token(request_with(header))


def test_keyless_access_is_decided_at_startup_and_closes_for_good() -> None:
    credentials, _ = service()
    policy = AuthPolicy.at_startup(credentials, local_tenant="local")
    assert policy.keyless_open and policy.loopback_only
    assert policy.keyless_caller(credentials) == Principal.operator(
        "local", default_owner_id="default"
    )
    issued = credentials.create(tenant_id="local", owner_id="alice", role=CredentialRole.OWNER)
    assert policy.keyless_caller(credentials) is None
    assert not policy.keyless_open
    credentials.revoke(issued.credential.key_id)
    assert policy.keyless_caller(credentials) is None


def test_a_closed_keyless_policy_stays_closed_with_only_startup_keys() -> None:
    credentials, _ = service()
    old = credentials.create(tenant_id="local", owner_id="alice", role=CredentialRole.OWNER)
    credentials.revoke(old.credential.key_id)
    policy = AuthPolicy.at_startup(credentials, local_tenant="local")
    assert policy.keyless_caller(credentials) is not None  # a revoked startup key is no key
    policy.close_keyless()
    assert not policy.keyless_open
    assert policy.keyless_caller(credentials) is None


def test_a_keyed_or_remote_start_is_never_keyless() -> None:
    credentials, _ = service()
    assert not AuthPolicy.at_startup(credentials, local_tenant=None).keyless_open
    credentials.create(tenant_id="local", owner_id="alice", role=CredentialRole.OWNER)
    keyed = AuthPolicy.at_startup(credentials, local_tenant="local")
    assert not keyed.keyless_open and not keyed.loopback_only
    assert keyed.keyless_caller(credentials) is None


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8765", None),
        ("localhost", "http://localhost:3000"),
        ("[::1]:8765", "https://127.0.0.1"),
    ],
)
def test_loopback_hosts_and_origins_pass(host: str, origin: str | None) -> None:
    headers = {"host": host} | ({"origin": origin} if origin else {})
    require_loopback_request(Headers(headers))


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("evil.example:8765", None),
        ("127.0.0.1:notaport", None),
        ("127.0.0.1:99999", None),
        ("", None),
        ("127.0.0.1:8765", "http://evil.example"),
        ("127.0.0.1:8765", "http://127.0.0.1:99999"),
        ("127.0.0.1:8765", "http://127.0.0.1:notaport"),
        ("127.0.0.1:8765", "file://127.0.0.1"),
        ("127.0.0.1:8765", "null"),
    ],
)
def test_other_or_malformed_hosts_and_origins_are_refused(host: str, origin: str | None) -> None:
    headers = {"host": host} | ({"origin": origin} if origin else {})
    with pytest.raises(PermissionDeniedError):
        require_loopback_request(Headers(headers))


def test_authenticate_applies_the_loopback_rule_itself() -> None:
    """authenticate is the one function every surface calls: the rule holds even where the
    middleware is not installed."""
    credentials, _ = service()
    policy = AuthPolicy.at_startup(credentials, local_tenant="local")
    scope = {"type": "http", "method": "GET", "path": "/", "headers": [(b"host", b"evil.example")]}
    with pytest.raises(PermissionDeniedError):
        authenticate(Request(scope), credentials, policy)
    scope["headers"] = [(b"host", b"127.0.0.1:8765")]
    assert authenticate(Request(scope), credentials, policy).tenant_id == "local"
