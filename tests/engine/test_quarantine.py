"""A stored record that cannot be loaded fails only itself, on every backend that stores text.

Each test breaks a body straight in SQLite or DynamoDB, below the API, the way a record
written before a parser limit (or damaged on disk) would look.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prme.backends.embedded.service import INDEX_FILE, LEDGER_FILE
from prme.engine.config import EngineConfig
from prme.engine.service import MemoryEngine
from prme.engine.work_refs import WorkRef
from prme.errors import CorruptRecordError
from prme.model.enums import ProcessingStatus, WorkStatus
from prme.model.inputs import FastIngestInput, IngestInput, RetrieveInput, StoreInput
from prme.model.records import OwnerKey
from tests.harness.aws import aws_harness
from tests.harness.engines import ALICE, BOB, Harness, embedded_harness
from tests.harness.http import TENANT, Api
from tests.harness.poison import BREAKAGES, Poison, dynamodb_poison, sqlite_poison
from tests.harness.switchable_index import SwitchableIndex

# In every stored text; must never reach an error, a log line or another owner's answer.
MARKER = "pelican-secret-7"


@dataclass
class Poisonable:
    h: Harness
    poison: Poison


@pytest.fixture(params=["embedded", "aws"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Poisonable]:
    if request.param == "embedded":
        h = embedded_harness(tmp_path / "data")
        yield Poisonable(h, sqlite_poison(tmp_path / "data" / LEDGER_FILE))
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]
    else:
        dynamodb, table, opensearch, alias = request.getfixturevalue("aws_resources")
        yield Poisonable(
            aws_harness(dynamodb, table, opensearch, alias), dynamodb_poison(dynamodb, table)
        )


def store(h: Harness, content: str, owner: OwnerKey = ALICE) -> Any:
    return h.engine.store(owner, StoreInput(content=content))


def fast(h: Harness, owner: OwnerKey, *contents: str) -> list[str]:
    request = FastIngestInput.model_validate({"items": [{"content": c} for c in contents]})
    return h.engine.ingest_fast(owner, request).event_ids


def assert_quarantined(error: pytest.ExceptionInfo[CorruptRecordError], record_id: str) -> None:
    assert error.value.record_id == record_id
    assert MARKER not in str(error.value) and error.value.__cause__ is None


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_an_unreadable_node_fails_only_itself(
    backend: Poisonable, breakage: str, caplog: pytest.LogCaptureFixture
) -> None:
    h = backend.h
    broken = store(h, f"pelican nest on the pier {MARKER}")
    kept = store(h, f"pelican eggs hatched {MARKER}")
    store(h, f"pelican flew over Bob {MARKER}", owner=BOB)
    backend.poison("node", ALICE, broken.node_id, breakage)
    caplog.set_level(logging.INFO)

    # Retrieval answers with the owner's other records; the broken one is left out.
    results = h.engine.retrieve(ALICE, RetrieveInput(query="pelican")).results
    assert [r.node_id for r in results] == [kept.node_id]
    assert len(h.engine.retrieve(BOB, RetrieveInput(query="pelican")).results) == 1
    assert [n.id for n in h.ledger.list_nodes(ALICE)] == [kept.node_id]
    assert h.engine.get_event_nodes(ALICE, broken.event_id) == []

    # Asked for by id, it is a clear error naming it, never its content.
    with pytest.raises(CorruptRecordError) as read:
        h.engine.get_node(ALICE, broken.node_id)
    assert_quarantined(read, broken.node_id)
    with pytest.raises(CorruptRecordError) as archive:
        h.engine.archive(ALICE, broken.node_id)
    assert_quarantined(archive, broken.node_id)
    assert h.engine.archive(ALICE, kept.node_id).lifecycle_state.value == "archived"

    assert broken.node_id in caplog.text
    assert MARKER not in caplog.text


def test_materialization_of_an_unreadable_event_fails_with_its_reason(backend: Poisonable) -> None:
    h = backend.h
    broken, kept = fast(h, ALICE, f"first {MARKER}", f"second {MARKER}")
    (bobs,) = fast(h, BOB, f"bob's {MARKER}")
    backend.poison("event", ALICE, broken, "deep_metadata")

    report = h.engine.process_materializations(None)

    assert (report.processed, report.failed, report.pending) == (2, 1, 0)
    status, work = h.engine.get_processing_status(ALICE, broken)
    assert status is ProcessingStatus.FAILED
    assert [(w.status, w.last_error) for w in work] == [(WorkStatus.FAILED, "CorruptRecord")]
    assert h.engine.get_processing_status(ALICE, kept)[0] is ProcessingStatus.COMPLETED
    assert h.engine.get_processing_status(BOB, bobs)[0] is ProcessingStatus.COMPLETED
    with pytest.raises(CorruptRecordError) as read:
        h.engine.get_event(ALICE, broken)
    assert_quarantined(read, broken)


def test_index_work_on_an_unreadable_node_fails_with_its_reason(backend: Poisonable) -> None:
    h = backend.h
    index = SwitchableIndex(h.index)
    deps = h.engine.deps
    engine = MemoryEngine(type(deps)(**{**deps.__dict__, "index": index}))
    index.down = True
    broken = engine.store(ALICE, StoreInput(content=f"waiting {MARKER}"))
    kept = engine.store(ALICE, StoreInput(content=f"also waiting {MARKER}"))
    index.down = False
    assert broken.node_id is not None
    backend.poison("node", ALICE, broken.node_id, "invalid_json")

    report = engine.process_materializations(None)

    assert (report.processed, report.failed, report.pending) == (1, 1, 0)
    status, work = engine.get_processing_status(ALICE, broken.event_id)
    assert (status, work[0].last_error) == (ProcessingStatus.FAILED, "CorruptRecord")
    assert engine.get_processing_status(ALICE, kept.event_id)[0] is ProcessingStatus.COMPLETED


def test_an_unreadable_work_item_leaves_the_pending_set(backend: Poisonable) -> None:
    h = backend.h
    deps = h.engine.deps
    # One item a pass: an unreadable oldest item must not stop the work behind it.
    engine = MemoryEngine(
        type(deps)(**{**deps.__dict__, "config": EngineConfig(work_batch_size=1)})
    )
    (broken,) = fast(h, ALICE, f"oldest {MARKER}")
    h.clock.advance(seconds=1)
    (bobs,) = fast(h, BOB, f"bob's {MARKER}")
    (item,) = h.engine.get_processing_status(ALICE, broken)[1]
    backend.poison("work", ALICE, item.id, "missing_field")

    report = engine.process_materializations(None)

    assert (report.processed, report.pending) == (1, 0)
    assert engine.get_processing_status(BOB, bobs)[0] is ProcessingStatus.COMPLETED
    assert h.ledger.list_pending_work(None, 10) == []


def test_an_unreadable_expired_node_does_not_hold_up_expiry(backend: Poisonable) -> None:
    h = backend.h
    broken = h.engine.store(ALICE, StoreInput(content=f"soonest {MARKER}", ttl_days=1))
    h.clock.advance(seconds=1)
    expiring = h.engine.store(BOB, StoreInput(content=f"bob's {MARKER}", ttl_days=1))
    assert broken.node_id is not None and expiring.node_id is not None
    backend.poison("node", ALICE, broken.node_id, "deep_metadata")
    h.clock.advance(days=2)

    # A pass of one: the unreadable node, expired first, must not take every pass's slot.
    assert h.engine.archive_expired(limit=1) == 1
    assert h.engine.get_node(BOB, expiring.node_id).lifecycle_state.value == "archived"
    assert h.ledger.list_expired_nodes(h.clock.now(), 10) == []


def test_queued_work_on_an_unreadable_event_fails_and_the_batch_goes_on(
    backend: Poisonable,
) -> None:
    h = backend.h
    broken, kept = fast(h, ALICE, f"queued {MARKER}", f"queued too {MARKER}")
    (bobs,) = fast(h, BOB, f"bob queued {MARKER}")
    extracted = h.engine.ingest(ALICE, IngestInput(content=f"Ana met Bo in Oslo {MARKER}"))
    others = h.engine.ingest(BOB, IngestInput(content=f"Bo met Ana in Rome {MARKER}"))
    backend.poison("event", ALICE, broken, "missing_field")
    backend.poison("event", ALICE, extracted.event_id, "deep_metadata")

    # What the SQS consumer does with a batch of messages.
    report = h.engine.process_queued([WorkRef.of(item) for item in h.queue.sent])

    assert report.failed == 2  # the broken materialization and the broken extraction
    assert h.engine.get_processing_status(ALICE, broken)[1][0].last_error == "CorruptRecord"
    for owner, event_id in ((ALICE, kept), (BOB, bobs)):
        assert h.engine.get_processing_status(owner, event_id)[0] is ProcessingStatus.COMPLETED
    status, work = h.engine.get_extraction_status(ALICE, extracted.event_id)
    assert (status, work[0].last_error) == (ProcessingStatus.FAILED, "CorruptRecord")
    assert h.engine.get_extraction_status(BOB, others.event_id)[0] is ProcessingStatus.COMPLETED


def api_poison(request: pytest.FixtureRequest, tmp_path: Path) -> Poison:
    """The poisoner for the store behind the `api` fixture of this test."""
    if request.node.callspec.params["api"] == "embedded":
        return sqlite_poison(tmp_path / "data" / LEDGER_FILE)
    dynamodb, table, _, _ = request.getfixturevalue("aws_resources")
    return dynamodb_poison(dynamodb, table)


def test_the_api_names_an_unreadable_record_and_serves_the_rest(
    api: Api, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    poison = api_poison(request, tmp_path)
    client, alice = api.client, api.alice
    stored = [
        client.post("/v1/store", json={"content": f"pelican note {i} {MARKER}"}, headers=alice)
        for i in range(2)
    ]
    broken, kept = (response.json() for response in stored)
    owner = OwnerKey(tenant_id=TENANT, owner_id="alice")
    poison("node", owner, broken["node_id"], "deep_metadata")
    poison("event", owner, broken["event_id"], "deep_metadata")

    retrieved = client.post("/v1/retrieve", json={"query": "pelican note"}, headers=alice)
    assert retrieved.status_code == 200
    assert [r["node_id"] for r in retrieved.json()["results"]] == [kept["node_id"]]
    for path in (
        f"/v1/nodes/{broken['node_id']}",
        f"/v1/events/{broken['event_id']}",
        f"/v1/nodes/{broken['node_id']}/archive",
    ):
        answer = client.request("PUT" if path.endswith("archive") else "GET", path, headers=alice)
        assert answer.status_code == 500
        assert answer.json() == {
            "detail": CorruptRecordError.default_detail,
            "error": "corrupt_record",
        }
        assert MARKER not in answer.text
    paths = client.get("/openapi.json").json()["paths"]
    assert "500" in paths["/v1/nodes/{node_id}"]["get"]["responses"]
    # What hangs off the broken source stays readable: its status, its (readable) nodes.
    status = client.get(f"/v1/events/{broken['event_id']}/processing-status", headers=alice)
    assert status.status_code == 200
    assert client.get(f"/v1/events/{broken['event_id']}/nodes", headers=alice).json() == []
    assert client.get(f"/v1/nodes/{kept['node_id']}", headers=alice).status_code == 200
    # Another owner of the tenant writes and reads as before.
    bob_store = client.post("/v1/store", json={"content": "bob's pelican"}, headers=api.bob)
    assert bob_store.status_code == 200
    bobs = client.post("/v1/retrieve", json={"query": "pelican"}, headers=api.bob)
    assert [r["node_id"] for r in bobs.json()["results"]] == [bob_store.json()["node_id"]]


def _entity(h: Harness, owner: OwnerKey, name: str) -> None:
    h.engine.store(owner, StoreInput.model_validate({"content": name, "node_type": "entity"}))


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_an_unreadable_journal_record_fails_only_itself(
    backend: Poisonable, breakage: str, caplog: pytest.LogCaptureFixture
) -> None:
    h = backend.h
    _entity(h, ALICE, "IBM")
    _entity(h, ALICE, "International Business Machines")
    h.engine.propose_aliases(ALICE)
    [proposal] = h.engine.list_alias_proposals(ALICE)
    receipt_id = h.engine.retrieve(ALICE, RetrieveInput(query=f"IBM {MARKER}")).metrics.request_id
    backend.poison("journal", ALICE, proposal.proposal_journal.id, breakage)
    backend.poison("journal", ALICE, receipt_id, breakage)
    # Work for another owner, and more for the damaged one, that the maintenance scan must reach.
    _entity(h, BOB, "IBM")
    _entity(h, BOB, "International Business Machines")
    _entity(h, ALICE, "Lisbon")
    caplog.set_level(logging.INFO)

    # The scan over every owner goes on; listings leave the damaged record out.
    report = h.engine.propose_aliases()
    assert (report.owners_scanned, report.pending) == (2, 0)
    assert len(h.engine.list_alias_proposals(BOB)) == 1
    assert h.engine.list_alias_proposals(ALICE) == []
    # A read of the damaged record itself answers the fixed, content-free error.
    with pytest.raises(CorruptRecordError) as error:
        h.engine.get_retrieval_receipt(ALICE, receipt_id)
    assert_quarantined(error, receipt_id)
    assert MARKER not in caplog.text


# An idempotency record has no `id` field, so only the breakages of its JSON apply.
@pytest.mark.parametrize("breakage", ["deep_metadata", "invalid_json"])
def test_an_unreadable_idempotency_record_answers_the_fixed_error(
    backend: Poisonable, breakage: str
) -> None:
    h = backend.h
    key = "5b8c1d2e-0f4a-4e6b-9c7d-8e9f0a1b2c3d"
    h.engine.store(ALICE, StoreInput(content=f"kept once {MARKER}"), idempotency_key=key)
    backend.poison("idempotency", ALICE, key, breakage)

    # A retry with that key can neither replay nor write again: the fixed error, no content.
    with pytest.raises(CorruptRecordError) as error:
        h.engine.store(ALICE, StoreInput(content=f"kept once {MARKER}"), idempotency_key=key)
    assert_quarantined(error, key)


@pytest.mark.parametrize(
    "damage",
    [
        "vector=x'0102'",  # not a whole float
        "vector=zeroblob(12)",  # another width, as an older embedding model's
        "vector=42",  # not a blob at all
        "event_time='not a time'",
    ],
)
def test_an_unreadable_index_document_fails_only_itself(tmp_path: Path, damage: str) -> None:
    h = embedded_harness(tmp_path / "data")
    try:
        ids = [store(h, f"pelican {word}").node_id for word in ("one", "two", "three")]
        conn = sqlite3.connect(tmp_path / "data" / INDEX_FILE)
        try:
            with conn:
                # One of four fixed column updates, written in this test.
                conn.execute(f"UPDATE docs SET {damage} WHERE node_id=?", (ids[0],))  # noqa: S608
        finally:
            conn.close()

        # Retrieval answers with the owner's other records instead of failing every search.
        found = {
            r.node_id for r in h.engine.retrieve(ALICE, RetrieveInput(query="pelican")).results
        }
        assert set(ids[1:]) <= found
    finally:
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]


def test_an_unreadable_event_can_be_listed_past_and_deleted(backend: Poisonable) -> None:
    h = backend.h
    broken = store(h, f"a ruined source {MARKER}")
    kept = store(h, f"a sound source {MARKER}")
    backend.poison("event", ALICE, broken.event_id, "deep_metadata")

    # Listings leave it out and still reach every readable event after it.
    seen: list[str] = []
    after: str | None = None
    while True:
        page = h.engine.list_events(ALICE, limit=1, after_id=after)
        seen.extend(e.id for e in page.items)
        if page.next_after_id is None:
            break
        after = page.next_after_id
    assert seen == [kept.event_id]

    deletion = h.engine.delete_memory(ALICE, broken.event_id)
    assert deletion.deleted_node_ids == [broken.node_id]
    assert h.ledger.get_event(ALICE, broken.event_id) is None
    assert h.ledger.get_node(ALICE, broken.node_id) is None
    assert h.engine.get_event(ALICE, kept.event_id).content.startswith("a sound source")
