"""Idempotency keys: a retried write with the same key and input returns the first result.

A key is unique per owner across every operation and bound to the operation that first used
it and its exact input (as sent, so an omitted field and an explicit null differ). Reusing it
on another operation or with other input is a conflict (HTTP 409), and so is a replay whose
sources were deleted since. Records are kept at least `IDEMPOTENCY_TTL`; the ledger may delete
them after that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from prme.errors import ConflictError
from prme.model.canonical import checksum
from prme.model.records import IdempotencyRecord, OwnerKey
from prme.ports import Ledger

IDEMPOTENCY_TTL = timedelta(days=7)


def request_digest(operation: str, request: BaseModel) -> str:
    return checksum(
        {"operation": operation, "request": request.model_dump(mode="json", exclude_unset=True)}
    )


def key_binding(key: str | None, operation: str, request: BaseModel) -> tuple[str, str] | None:
    """The key with the digest of the request it binds; None when the caller sent no key."""
    return (key, request_digest(operation, request)) if key else None


def saved_result(
    ledger: Ledger, owner: OwnerKey, operation: str, binding: tuple[str, str] | None
) -> dict[str, Any] | None:
    """The result saved under the key for this very request; None when there is none (or no
    key). Raises ConflictError when the key was used for another request."""
    if binding is None:
        return None
    key, digest = binding
    saved = ledger.get_idempotency(owner, operation, key)
    return None if saved is None else check_replay(saved, operation, digest)


def commit_or_replay(
    commit: Callable[[], None],
    ledger: Ledger,
    owner: OwnerKey,
    operation: str,
    binding: tuple[str, str] | None,
) -> dict[str, Any] | None:
    """Run `commit`; None once it committed. When it conflicts because a concurrent request
    with the same key committed first, the result that request saved: the retry answers as
    the first did. Any other conflict is raised."""
    try:
        commit()
    except ConflictError:
        replay = saved_result(ledger, owner, operation, binding)
        if replay is None:
            raise
        return replay
    return None


def new_record(
    owner: OwnerKey,
    operation: str,
    key: str,
    *,
    digest: str,
    result: dict[str, Any],
    now: datetime,
) -> IdempotencyRecord:
    return IdempotencyRecord(
        tenant_id=owner.tenant_id,
        owner_id=owner.owner_id,
        operation=operation,
        key=key,
        request_sha256=digest,
        result=result,
        created_at=now,
        expires_at=now + IDEMPOTENCY_TTL,
    )


def check_replay(record: IdempotencyRecord, operation: str, digest: str) -> dict[str, Any]:
    """The saved result when operation and input match; a conflict when the key saw others."""
    if record.operation != operation:
        # One key, one logical write: a key sent to a second route would otherwise write a
        # second copy of the same content (the first store, then an ingest of it).
        raise ConflictError("Idempotency-Key was already used by another operation")
    if record.request_sha256 != digest:
        raise ConflictError("Idempotency-Key was already used with a different request")
    return record.result


def require_sources_held(ledger: Ledger, owner: OwnerKey, event_ids: Sequence[str]) -> None:
    """Refuse to replay a write whose sources were deleted since it ran.

    Answering with the first result would hand back ids that now read as not found, and
    writing again would bring back a memory its owner deleted; the caller decides, with a
    new key."""
    if len(ledger.get_events(owner, event_ids)) < len(set(event_ids)):
        raise ConflictError(
            "Idempotency-Key was used by a write whose memory was deleted since; send a new "
            "key to store it again"
        )
