"""What a journal checksum covers, and how a record that fails it, or sits elsewhere, is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from prme.engine.journal import check_intact
from prme.errors import JournalIntegrityError
from prme.model.canonical import checksum
from prme.model.records import JOURNAL_CHECKSUM_VERSION, JournalRecord, OwnerKey

OWNER = OwnerKey(tenant_id="t1", owner_id="alice")
RECORD = JournalRecord.build(
    record_id="relevance:1",
    owner=OWNER,
    operation="relevance_feedback",
    subject_id="request-1",
    created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    payload={"labels": {"n1": True}, "score": 0.5},
)

CHANGES: dict[str, Any] = {
    "id": "relevance:2",
    "tenant_id": "t2",
    "owner_id": "bob",
    "operation": "answer_citation",
    "subject_id": "request-2",
    "created_at": RECORD.created_at + timedelta(microseconds=1),
    "payload": {"labels": {"n1": False}, "score": 0.5},
}


def test_a_new_record_verifies_with_the_full_checksum() -> None:
    assert RECORD.checksum_version == JOURNAL_CHECKSUM_VERSION
    assert RECORD.verify()
    stored = JournalRecord.model_validate_json(RECORD.model_dump_json())
    assert stored == RECORD and stored.verify()
    assert check_intact(stored, OWNER, "relevance:1") is stored


@pytest.mark.parametrize("field", CHANGES)
def test_changing_any_field_breaks_the_checksum(field: str) -> None:
    assert not RECORD.model_copy(update={field: CHANGES[field]}).verify()


def test_a_changed_checksum_or_unknown_version_fails() -> None:
    assert not RECORD.model_copy(update={"checksum": checksum("other")}).verify()
    assert not RECORD.model_copy(update={"checksum_version": 3}).verify()


def test_a_legacy_record_verifies_over_operation_subject_and_payload() -> None:
    legacy_sum = checksum(
        {"operation": RECORD.operation, "subject_id": RECORD.subject_id, "payload": RECORD.payload}
    )
    legacy = RECORD.model_copy(update={"checksum_version": 1, "checksum": legacy_sum})
    assert legacy.verify()
    assert not legacy.model_copy(update={"payload": {}}).verify()
    assert not legacy.model_copy(update={"operation": "x"}).verify()
    assert not legacy.model_copy(update={"subject_id": "x"}).verify()


@pytest.mark.parametrize(
    ("owner", "record_id"),
    [
        (OWNER, "relevance:2"),
        (OwnerKey(tenant_id="t2", owner_id="alice"), "relevance:1"),
        (OwnerKey(tenant_id="t1", owner_id="bob"), "relevance:1"),
    ],
)
def test_a_record_read_under_another_key_is_refused(owner: OwnerKey, record_id: str) -> None:
    with pytest.raises(JournalIntegrityError):
        check_intact(RECORD, owner, record_id)


def test_a_record_that_fails_its_checksum_is_refused() -> None:
    altered = RECORD.model_copy(update={"payload": {}})
    with pytest.raises(JournalIntegrityError):
        check_intact(altered, OWNER, "relevance:1")
