"""Journal reads that refuse a tampered record: every engine read of the journal goes here.

A record must pass its checksum and sit where it claims (its owner and id match the key it
was read under); a listing must come back in strict id order within its prefix. Anything
else raises `JournalIntegrityError` instead of serving altered data.
"""

from __future__ import annotations

from prme.engine.deps import EngineDeps
from prme.errors import JournalIntegrityError
from prme.model.records import JournalRecord, OwnerKey


def check_intact(record: JournalRecord, owner: OwnerKey, record_id: str) -> JournalRecord:
    """The record, if it verifies and belongs to `owner` under `record_id`."""
    placed = (
        record.id == record_id
        and record.tenant_id == owner.tenant_id
        and record.owner_id == owner.owner_id
    )
    if not placed or not record.verify():
        raise JournalIntegrityError()
    return record


def read_journal(
    deps: EngineDeps, owner: OwnerKey, record_id: str, *, receipt: bool = False
) -> JournalRecord | None:
    record = deps.ledger.get_journal(owner, record_id, receipt=receipt)
    return None if record is None else check_intact(record, owner, record_id)


def list_journal(
    deps: EngineDeps, owner: OwnerKey, id_prefix: str, *, after_id: str | None, limit: int
) -> list[JournalRecord]:
    """One page of records, checked one by one and for their order.

    Ledgers return records in the order of their keys; a record whose body names another
    id than its key (two records swapped) breaks the strict id order or leaves the prefix."""
    records = deps.ledger.list_journal(owner, id_prefix, after_id=after_id, limit=limit)
    _check_page(records, owner, id_prefix, after_id)
    return records


def _check_page(
    records: list[JournalRecord], owner: OwnerKey, id_prefix: str, after_id: str | None
) -> None:
    """Each record intact, under the prefix, and in strict id order after `after_id`."""
    previous = after_id
    for record in records:
        in_order = previous is None or record.id > previous
        if not in_order or not record.id.startswith(id_prefix):
            raise JournalIntegrityError()
        check_intact(record, owner, record.id)
        previous = record.id


def list_journal_of_subject(
    deps: EngineDeps,
    owner: OwnerKey,
    id_prefix: str,
    subject_id: str,
    *,
    after_id: str | None,
    limit: int,
    scan_limit: int,
) -> tuple[list[JournalRecord], str | None]:
    """One page of one subject's records and where to go on, checked as `list_journal` checks
    a page, and each for its subject."""
    records, next_after = deps.ledger.list_journal_of_subject(
        owner, id_prefix, subject_id, after_id=after_id, limit=limit, scan_limit=scan_limit
    )
    _check_page(records, owner, id_prefix, after_id)
    if any(record.subject_id != subject_id for record in records):
        raise JournalIntegrityError()
    return records, next_after
