"""Idempotency keys: a retried write with the same key and input returns the first result.

A key is bound to one owner, one operation and the exact input (as sent, so an omitted
field and an explicit null differ). Reusing it with other input is a conflict (HTTP 409).
Records are kept at least `IDEMPOTENCY_TTL`; the ledger may delete them after that.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from prme.errors import ConflictError
from prme.model.canonical import checksum
from prme.model.records import IdempotencyRecord, OwnerKey

IDEMPOTENCY_TTL = timedelta(days=7)


def request_digest(operation: str, request: BaseModel) -> str:
    return checksum(
        {"operation": operation, "request": request.model_dump(mode="json", exclude_unset=True)}
    )


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


def check_replay(record: IdempotencyRecord, digest: str) -> dict[str, Any]:
    """The saved result when the input matches; a conflict when the key saw other input."""
    if record.request_sha256 != digest:
        raise ConflictError("Idempotency-Key was already used with a different request")
    return record.result
