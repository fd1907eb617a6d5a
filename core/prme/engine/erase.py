"""Erasing an owner completely: API keys, search documents, then every ledger record, in bounded
steps that a repeated call resumes, with a receipt kept as the tenant's audit record.
"""

from __future__ import annotations

from datetime import datetime

from prme.engine.deps import EngineDeps
from prme.errors import InvalidRequestError
from prme.model.erasure import ErasureCounts, OwnerErasure, owner_reference
from prme.model.records import OwnerKey

# Records asked of the ledger per transaction (DynamoDB adapters take fewer: 100 per transaction).
STEP_RECORDS = 500


def erase_owner(deps: EngineDeps, owner: OwnerKey, *, confirm: str) -> OwnerErasure:
    """Remove everything stored for one owner and answer with the erasure record.

    `confirm` must repeat the user id: a stray call never erases anyone. The owner's keys go
    first (they can no longer write), then the index documents (as a delete does: nothing
    searchable outlives its ledger record), then the ledger records, a bounded step at a time,
    each step saving the counts with its deletions in one transaction. When the call's budget
    (`erase_records_per_call`) runs out, the answer says `complete: false`: the next call
    continues from the saved record. The ledger is done when a step finds nothing left; the
    index is then swept again, for documents a concurrent pass wrote meanwhile.
    """
    if confirm != owner.owner_id:
        raise InvalidRequestError(
            "confirm must repeat the user id of the owner to erase", field=("confirm",)
        )
    erasure_id = owner_reference(owner.tenant_id, owner.owner_id)
    stored = deps.ledger.get_erasure(owner.tenant_id, erasure_id)
    # A finished erasure is answered again when nothing was written since; otherwise the
    # new records are erased under a new record.
    finished = stored if stored is not None and stored.complete else None
    if stored is None or finished is not None:
        stored = OwnerErasure(
            erasure_id=erasure_id,
            started_at=deps.clock.now(),
            finished_at=None,
            complete=False,
            removed=ErasureCounts(),
        )
    record = _counted(deps, owner, stored, "api_keys", deps.ledger.erase_owner_keys(owner))
    record = _counted(deps, owner, record, "index_documents", deps.index.delete_owner(owner))
    budget = deps.config.erase_records_per_call
    while budget > 0:
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
        deps.ledger.save_erasure(finished, owner.tenant_id)
        return finished
    record = record.model_copy(update={"complete": True, "finished_at": deps.clock.now()})
    deps.ledger.save_erasure(record, owner.tenant_id)
    return record


def erasure_began_after(deps: EngineDeps, owner: OwnerKey, moment: datetime) -> bool:
    """Whether an erasure of the owner (finished or not) began at or after `moment`."""
    erasure_id = owner_reference(owner.tenant_id, owner.owner_id)
    record = deps.ledger.get_erasure(owner.tenant_id, erasure_id)
    return record is not None and record.started_at >= moment


def _counted(
    deps: EngineDeps, owner: OwnerKey, record: OwnerErasure, field: str, count: int
) -> OwnerErasure:
    """`record` with `count` more removed under `field`, saved when that changed anything."""
    if count == 0 and deps.ledger.get_erasure(owner.tenant_id, record.erasure_id) is not None:
        return record
    updated = record.model_copy(update={"removed": record.removed.plus({field: count})})
    deps.ledger.save_erasure(updated, owner.tenant_id)
    return updated
