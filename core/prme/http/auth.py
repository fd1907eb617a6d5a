"""Bearer-key authentication for the HTTP API."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from prme.engine.credentials import CredentialService
from prme.engine.identity import Principal
from prme.errors import AuthenticationError


@dataclass(frozen=True)
class AuthPolicy:
    """How requests are authenticated.

    `open_tenant`: when set and no active key exists, requests without a key act as an
    operator of that tenant (the local, loopback-only default of `prme serve`).
    """

    open_tenant: str | None = None
    open_default_owner: str = "default"


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationError()
    return token.strip()


def authenticate(request: Request, credentials: CredentialService, policy: AuthPolicy) -> Principal:
    token = bearer_token(request)
    if token is None and policy.open_tenant is not None and not credentials.any_active():
        return Principal.operator(policy.open_tenant, default_owner_id=policy.open_default_owner)
    return credentials.authenticate(token)
