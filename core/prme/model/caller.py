"""Who a request's key is, as the caller may read it back: tenant, role, owner and key id."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from prme.model.enums import CredentialRole


class CallerIdentity(BaseModel):
    """The caller of one request as its key (or keyless local access) makes it; never a secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str = Field(description="The tenant the key belongs to")
    role: CredentialRole = Field(
        description="owner: the key acts for one user only (owner_id), and user_id may be "
        "omitted or must name that user; operator: the key acts for any user of the tenant, "
        "named by user_id on each call"
    )
    keyless: bool = Field(
        description="True for a local server's keyless access (no API key exists yet, loopback "
        "only): an operator without a key, whose calls that name no user_id act for "
        "default_owner_id"
    )
    owner_id: str | None = Field(
        description="The one user an owner key acts for; null for an operator"
    )
    default_owner_id: str | None = Field(
        description="The user a call that names no user_id acts for, when there is one: the "
        "owner key's user, or the default user of keyless local access"
    )
    key_id: str | None = Field(
        description="The key's id, as GET /v1/keys lists it (never its secret); null without a key"
    )
