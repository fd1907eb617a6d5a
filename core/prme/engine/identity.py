"""Who is calling and which owner a call acts for: the authorization rules of every route."""

from __future__ import annotations

from dataclasses import dataclass

from prme.errors import InvalidRequestError, PermissionDeniedError
from prme.model.caller import CallerIdentity
from prme.model.enums import CredentialRole
from prme.model.input_policy import text_problem
from prme.model.records import OwnerKey

MAX_USER_ID_CHARS = 256


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: bound to one owner, or an operator for a whole tenant."""

    tenant_id: str
    role: CredentialRole
    owner_id: str | None = None
    key_id: str | None = None
    # Only the keyless local mode sets this: the owner used when a call names none.
    default_owner_id: str | None = None

    @classmethod
    def owner(cls, tenant_id: str, owner_id: str, key_id: str | None = None) -> Principal:
        return cls(tenant_id=tenant_id, role=CredentialRole.OWNER, owner_id=owner_id, key_id=key_id)

    @classmethod
    def operator(
        cls, tenant_id: str, key_id: str | None = None, default_owner_id: str | None = None
    ) -> Principal:
        return cls(
            tenant_id=tenant_id,
            role=CredentialRole.OPERATOR,
            key_id=key_id,
            default_owner_id=default_owner_id,
        )


def validate_user_id(user_id: str) -> str:
    if not user_id or not user_id.strip() or len(user_id) > MAX_USER_ID_CHARS:
        raise InvalidRequestError(
            f"user_id must be 1 to {MAX_USER_ID_CHARS} characters", field=("user_id",)
        )
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in user_id):
        raise InvalidRequestError("user_id must not contain control characters", field=("user_id",))
    problem = text_problem(user_id)
    if problem is not None:
        raise InvalidRequestError(f"user_id {problem}", field=("user_id",))
    return user_id


def require_operator(principal: Principal, action: str) -> None:
    """Refuse an owner key an operator's action (`action` says what was refused)."""
    if principal.role is not CredentialRole.OPERATOR:
        raise PermissionDeniedError(f"Only an operator key may {action}")


def resolve_owner(principal: Principal, user_id: str | None) -> OwnerKey:
    """The owner a call acts for: an owner key's own, or the user_id an operator names."""
    if principal.role is CredentialRole.OWNER:
        assert principal.owner_id is not None  # noqa: S101 - an owner principal always has one
        if user_id is not None and user_id != principal.owner_id:
            raise PermissionDeniedError()
        return OwnerKey(tenant_id=principal.tenant_id, owner_id=principal.owner_id)
    if user_id is None:
        user_id = principal.default_owner_id
    if user_id is None:
        raise InvalidRequestError("operator keys must name user_id", field=("user_id",))
    return OwnerKey(tenant_id=principal.tenant_id, owner_id=validate_user_id(user_id))


def describe_caller(principal: Principal) -> CallerIdentity:
    """What a caller may read back about itself: everything its principal holds but a secret,
    which a principal never holds."""
    owner_key = principal.role is CredentialRole.OWNER
    return CallerIdentity(
        tenant_id=principal.tenant_id,
        role=principal.role,
        # Only keyless local access (and an in-process client) acts as an operator without a key.
        keyless=principal.key_id is None and not owner_key,
        owner_id=principal.owner_id if owner_key else None,
        default_owner_id=principal.owner_id if owner_key else principal.default_owner_id,
        key_id=principal.key_id,
    )
