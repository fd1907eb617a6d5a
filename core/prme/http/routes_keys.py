"""Routes of key management: an operator key creates, lists and revokes its tenant's owner keys."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Path, Query

from prme.engine.identity import Principal
from prme.http.admission import admit_request
from prme.http.dependencies import ApiRuntime, Caller, served
from prme.http.schemas import (
    IssuedKeyResponse,
    KeyListResponse,
    KeyRequest,
    KeyResponse,
)
from prme.operations import ID_DESCRIPTIONS

KeyIdPath = Annotated[str, Path(min_length=1, max_length=64, description=ID_DESCRIPTIONS["key_id"])]
UserFilter = Annotated[
    str | None, Query(min_length=1, max_length=256, description="Only this user's keys")
]


def register(app: FastAPI, runtime: ApiRuntime) -> None:
    """Add the key routes; they call the key service, not the engine."""
    credentials, policy = runtime.credentials, runtime.auth

    def admit(caller: Principal) -> None:
        admit_request(runtime.engine, caller.tenant_id)

    @served(app, "create_key")
    def create_key(body: KeyRequest, caller: Caller) -> IssuedKeyResponse:
        # A keyless caller has no key of its own: its first key closes keyless access.
        admit(caller)
        ends_keyless = caller.key_id is None and policy.keyless_open
        issued = credentials.create_key(caller, user_id=body.user_id, label=body.label)
        if ends_keyless:
            # Closed now, not at the next keyless request; close_keyless logs that it ended.
            policy.close_keyless()
        listed = KeyResponse.of(issued.credential)
        return IssuedKeyResponse(
            **listed.model_dump(), secret=issued.secret, keyless_access_ended=ends_keyless
        )

    @served(app, "list_keys")
    def list_keys(caller: Caller, user_id: UserFilter = None) -> KeyListResponse:
        admit(caller)
        keys = credentials.list_keys(caller, user_id=user_id)
        return KeyListResponse(items=[KeyResponse.of(key) for key in keys])

    @served(app, "revoke_key")
    def revoke_key(key_id: KeyIdPath, caller: Caller) -> KeyResponse:
        admit(caller)
        return KeyResponse.of(credentials.revoke_key(caller, key_id))
