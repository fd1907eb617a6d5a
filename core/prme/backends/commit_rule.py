"""The rule every ledger applies to a commit that conflicts: was it this very commit?

Every commit carries a journal record whose id is unique to that write. When a commit
conflicts but its journal record is stored exactly as sent, the write was already applied
(a retry after a lost answer, e.g. a read timeout after DynamoDB committed): it is a no-op,
not a conflict. Any other conflict is raised as is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from prme.errors import ConflictError
from prme.model.records import JournalRecord, OwnerKey


class _JournalReader(Protocol):
    def get_journal(self, owner: OwnerKey, record_id: str) -> JournalRecord | None: ...


@contextmanager
def applied_once(ledger: _JournalReader, journal: JournalRecord) -> Iterator[None]:
    """Run a commit carrying `journal`; a conflict of an already applied commit passes."""
    try:
        yield
    except ConflictError:
        owner = OwnerKey(tenant_id=journal.tenant_id, owner_id=journal.owner_id)
        if ledger.get_journal(owner, journal.id) != journal:
            raise
