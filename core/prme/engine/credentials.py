"""API keys: creation (the secret is shown once), hashing, authentication and revocation."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from prme.engine.identity import Principal, require_operator, validate_user_id
from prme.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
)
from prme.model.enums import CredentialRole
from prme.model.input_policy import check_name
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
        try:
            # `prme keys list` prints labels on the server's terminal: no escapes, no new lines.
            check_name(label)
        except ValueError as exc:
            raise InvalidRequestError(f"label {exc}", field=("label",)) from None
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

    # -- the operations an operator runs over the API, within its own tenant --

    def create_key(self, actor: Principal, *, user_id: str, label: str = "") -> IssuedKey:
        """A new owner key acting for `user_id` of the operator's tenant; its secret is in the
        result only, never stored."""
        require_operator(actor, "create API keys")
        return self.create(
            tenant_id=actor.tenant_id, owner_id=user_id, role=CredentialRole.OWNER, label=label
        )

    def list_keys(self, actor: Principal, *, user_id: str | None = None) -> list[Credential]:
        """The operator's tenant's keys (owner and operator keys), optionally one user's."""
        require_operator(actor, "list API keys")
        keys = self.list(actor.tenant_id)
        return [key for key in keys if user_id is None or key.owner_id == user_id]

    def revoke_key(self, actor: Principal, key_id: str) -> Credential:
        """Revoke one owner key of the operator's tenant; another tenant's key is not found."""
        require_operator(actor, "revoke API keys")
        found = next((key for key in self.list(actor.tenant_id) if key.key_id == key_id), None)
        if found is None:
            raise NotFoundError("API key not found")
        if found.role is not CredentialRole.OWNER:
            raise PermissionDeniedError("Operator keys are revoked with the prme CLI on the server")
        return self.revoke(key_id)

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
