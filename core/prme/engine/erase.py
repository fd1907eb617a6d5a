"""Erasing an owner completely: API keys, search documents, then every ledger record, in bounded
steps that a repeated call resumes, with a receipt kept as the tenant's audit record.
"""

from __future__ import annotations

import time
from datetime import datetime

from prme.engine.deadlines import PASS_SHARE_OF_DEADLINE, remaining_seconds
from prme.engine.deps import EngineDeps
from prme.errors import ConflictError, InvalidRequestError, RetryableStorageError
from prme.model.erasure import ErasureCounts, OwnerErasure, owner_reference
from prme.model.records import OwnerKey

# Records asked of the ledger per transaction (DynamoDB adapters take fewer: 100 per transaction).
STEP_RECORDS = 500
# Times a call starts over from the stored record when a concurrent call of the same owner
# changed it first.
CONFLICT_ROUNDS = 8


def erase_owner(deps: EngineDeps, owner: OwnerKey, *, confirm: str) -> OwnerErasure:
    """Remove everything stored for one owner and answer with the erasure record.

    `confirm` must repeat the user id: a stray call never erases anyone. The owner's keys go
    first (they can no longer write), then the index documents (as a delete does: nothing
    searchable outlives its ledger record), then the ledger records, a bounded step at a time,
    each step saving the counts with its deletions in one transaction. When the call's budget
    (`erase_records_per_call`, or half of what is left of a request deadline) runs out, the
    answer says `complete: false`: the next call continues from the saved record. The ledger is done when a step finds nothing left; the
    index is then swept again, for documents a concurrent pass wrote meanwhile.
    """
    if confirm != owner.owner_id:
        raise InvalidRequestError(
            "confirm must repeat the user id of the owner to erase", field=("confirm",)
        )
    erasure_id = owner_reference(owner.tenant_id, owner.owner_id)
    for _ in range(CONFLICT_ROUNDS):
        try:
            return _erase(deps, owner, erasure_id)
        except ConflictError:
            # Another erase call of this owner moved the record on (a client's retry after a
            # timeout while the first call still runs): continue from what it saved.
            continue
    raise RetryableStorageError()


def _erase(deps: EngineDeps, owner: OwnerKey, erasure_id: str) -> OwnerErasure:
    stored = deps.ledger.get_erasure(owner.tenant_id, erasure_id)
    record = stored
    # A finished erasure is answered again when nothing was written since; otherwise the new
    # records are erased under a new record, which replaces it.
    if record is None or record.complete:
        record = OwnerErasure(
            erasure_id=erasure_id,
            started_at=deps.clock.now(),
            finished_at=None,
            complete=False,
            removed=ErasureCounts(),
        )
    finished = stored if stored is not None and stored.complete else None
    if record is not stored:
        deps.ledger.save_erasure(record, owner.tenant_id, replacing=stored)
    record = _counted(deps, owner, record, "api_keys", deps.ledger.erase_owner_keys(owner))
    record = _counted(deps, owner, record, "index_documents", deps.index.delete_owner(owner))
    if deps.imports is not None:
        # Import jobs kept apart from the ledger; counted as the ledger counts those it keeps.
        record = _counted(deps, owner, record, "journal_records", deps.imports.erase_owner(owner))
    if deps.ranking_profiles is not None:
        # Ranking profiles and their changes, where the store keeps them apart from the ledger.
        removed = deps.ranking_profiles.erase_owner(owner)
        deps.profile_cache.invalidate(owner)
        record = _counted(deps, owner, record, "journal_records", removed)
    budget = deps.config.erase_records_per_call
    # Under a request deadline (API Gateway's 29 s), steps stop starting once its share is
    # spent, keeping the rest for the answer; the next call continues.
    remaining = remaining_seconds()
    stop_at = None if remaining is None else time.monotonic() + remaining * PASS_SHARE_OF_DEADLINE
    while budget > 0:
        if stop_at is not None and time.monotonic() >= stop_at:
            return record
        before = record.removed.total
        record = deps.ledger.erase_owner_step(owner, record, min(STEP_RECORDS, budget))
        removed = record.removed.total - before
        if removed == 0:
            break
        budget -= removed
    else:
        return record  # the budget ran out before a step found the ledger empty
    record = _counted(deps, owner, record, "index_documents", deps.index.delete_owner(owner))
    if finished is not None and record.removed.total == 0:
        deps.ledger.save_erasure(finished, owner.tenant_id, replacing=record)
        return finished
    done = record.model_copy(update={"complete": True, "finished_at": deps.clock.now()})
    deps.ledger.save_erasure(done, owner.tenant_id, replacing=record)
    return done


def erasure_began_after(deps: EngineDeps, owner: OwnerKey, moment: datetime) -> bool:
    """Whether an erasure of the owner (finished or not) began at or after `moment`."""
    erasure_id = owner_reference(owner.tenant_id, owner.owner_id)
    record = deps.ledger.get_erasure(owner.tenant_id, erasure_id)
    return record is not None and record.started_at >= moment


def _counted(
    deps: EngineDeps, owner: OwnerKey, record: OwnerErasure, field: str, count: int
) -> OwnerErasure:
    """`record` with `count` more removed under `field`, saved in its place when that is more.

    The removal is done; should the save meet a concurrent call's record, the count is added
    to that one instead (the removal cannot be repeated, so it must not be lost)."""
    if count == 0:
        return record
    for _ in range(CONFLICT_ROUNDS):
        updated = record.model_copy(update={"removed": record.removed.plus({field: count})})
        try:
            deps.ledger.save_erasure(updated, owner.tenant_id, replacing=record)
        except ConflictError:
            current = deps.ledger.get_erasure(owner.tenant_id, record.erasure_id)
            if current is None:
                raise
            record = current
            continue
        return updated
    raise RetryableStorageError()
