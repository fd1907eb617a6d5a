"""API keys: creation (the secret is shown once), hashing, authentication and revocation."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from prme.engine.identity import Principal, validate_user_id
from prme.errors import AuthenticationError, NotFoundError
from prme.model.enums import CredentialRole
from prme.model.records import Credential
from prme.ports import Clock, CredentialStore

KEY_PREFIX = "prme_"


def hash_api_key(secret: str) -> str:
    # Keys are 256-bit random tokens, so one fast unsalted digest resists offline guessing.
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class IssuedKey:
    credential: Credential
    secret: str


class CredentialService:
    def __init__(self, store: CredentialStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def create(
        self,
        *,
        tenant_id: str,
        owner_id: str | None,
        role: CredentialRole,
        label: str = "",
    ) -> IssuedKey:
        if role is CredentialRole.OWNER:
            if owner_id is None:
                raise ValueError("an owner key needs an owner")
            validate_user_id(owner_id)
        elif owner_id is not None:
            raise ValueError("an operator key acts for the whole tenant and names no owner")
        key_id = secrets.token_hex(8)
        secret = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        credential = Credential(
            key_id=key_id,
            key_hash=hash_api_key(secret),
            tenant_id=tenant_id,
            owner_id=owner_id,
            role=role,
            label=label,
            created_at=self._clock.now(),
        )
        self._store.put_credential(credential)
        return IssuedKey(credential=credential, secret=secret)

    def authenticate(self, secret: str | None) -> Principal:
        if not secret:
            raise AuthenticationError()
        credential = self._store.find_credential(hash_api_key(secret))
        if credential is None or not credential.active:
            raise AuthenticationError()
        if credential.role is CredentialRole.OWNER:
            assert credential.owner_id is not None  # noqa: S101 - enforced at creation
            return Principal.owner(credential.tenant_id, credential.owner_id, credential.key_id)
        return Principal.operator(credential.tenant_id, credential.key_id)

    def list(self, tenant_id: str | None = None) -> list[Credential]:
        return self._store.list_credentials(tenant_id)

    def any_active(self) -> bool:
        return any(c.active for c in self._store.list_credentials(None))

    def any_unreadable(self) -> bool:
        """Whether a stored key record could not be read (listings leave it out)."""
        return self._store.count_credentials() > len(self._store.list_credentials(None))

    def revoke(self, key_id: str) -> Credential:
        revoked = self._store.revoke_credential(key_id, self._clock.now())
        if revoked is None:
            raise NotFoundError("API key not found")
        return revoked
