"""Journal records altered straight in SQLite or DynamoDB are refused on read, replay and listing.

Each case changes what the store holds below the API (a payload value, a checksum, two
records swapped under each other's keys, or their contents swapped with ids rewritten to
fit) and the API must answer with the sanitized integrity error, never the altered data.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from prme.backends.aws import resources
from prme.backends.aws.dynamodb_ledger import RECEIPT_SHARDS, DynamoDbLedger
from prme.backends.embedded.sqlite_ledger import SqliteLedger
from prme.engine.service import MemoryEngine
from prme.errors import JournalIntegrityError
from prme.model.records import OwnerKey
from tests.harness.http import TENANT, Api
from tests.harness.poison import stored_text

ALICE = OwnerKey(tenant_id=TENANT, owner_id="alice")
REFUSED = {"detail": JournalIntegrityError.default_detail, "error": "journal_integrity"}


class RawJournal:
    """Journal bodies of one owner as the store holds them, read and written below the API."""

    def __init__(self, api: Api, owner: OwnerKey) -> None:
        engine: MemoryEngine = api.client.app.state.runtime.engine  # type: ignore[attr-defined]
        self._ledger = engine.deps.ledger
        self._owner = owner

    def read(self, record_id: str) -> dict[str, Any]:
        ledger, owner = self._ledger, self._owner
        if isinstance(ledger, SqliteLedger):
            rows = ledger._conn.execute(
                "SELECT body FROM journal WHERE tenant=? AND owner=? AND id=?",
                (owner.tenant_id, owner.owner_id, record_id),
            ).fetchall()
            body: dict[str, Any] = json.loads(rows[0][0])
            return body
        assert isinstance(ledger, DynamoDbLedger)
        item = ledger._client.get_item(
            TableName=ledger._table,
            Key=self._key(record_id),
            ConsistentRead=True,
        )["Item"]
        dynamo_body: dict[str, Any] = json.loads(stored_text(item))
        return dynamo_body

    def write(self, record_id: str, body: dict[str, Any]) -> None:
        ledger, owner, text = self._ledger, self._owner, json.dumps(body)
        if isinstance(ledger, SqliteLedger):
            ledger._conn.execute(
                "UPDATE journal SET body=? WHERE tenant=? AND owner=? AND id=?",
                (text, owner.tenant_id, owner.owner_id, record_id),
            )
            return
        assert isinstance(ledger, DynamoDbLedger)
        ledger._client.update_item(
            TableName=ledger._table,
            Key=self._key(record_id),
            UpdateExpression="SET body = :body",
            ExpressionAttributeValues={":body": {"B": zlib.compress(text.encode())}},
        )

    def _key(self, record_id: str) -> dict[str, Any]:
        """Where the record is stored: the owner's partition or, for a receipt, one of the
        owner's receipt partition keys."""
        ledger = self._ledger
        assert isinstance(ledger, DynamoDbLedger)
        # The ids here hold no `#` or `%`, which the ledger would escape in its keys.
        pk = f"T#{self._owner.tenant_id}#O#{self._owner.owner_id}"
        for place in [pk, *(f"{pk}#RECEIPTS#{n}" for n in range(RECEIPT_SHARDS))]:
            key = {
                resources.PARTITION_KEY: {"S": place},
                resources.SORT_KEY: {"S": f"JOURNAL#{record_id}"},
            }
            if "Item" in ledger._client.get_item(TableName=ledger._table, Key=key):
                return key
        raise AssertionError(f"no journal record {record_id}")


@dataclass(frozen=True)
class AliceJournal:
    """Two receipts and two relevance records of alice, relevance ids in listing order."""

    receipts: tuple[str, str]
    relevance: tuple[str, str]


def alice_journal(api: Api) -> AliceJournal:
    c = api.client

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = c.post(path, json=body, headers=api.alice)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    node = post("/v1/store", {"content": "Alice drinks oolong tea"})["node_id"]
    receipts = [
        post("/v1/retrieve", {"query": q})["metrics"]["request_id"]
        for q in ("Which tea does alice drink?", "What does alice like?")
    ]
    feedback = sorted(
        post("/v1/relevance", {"request_id": rid, "labels": {node: True}})["feedback_id"]
        for rid in receipts
    )
    return AliceJournal((receipts[0], receipts[1]), (feedback[0], feedback[1]))


Tamper = Callable[[RawJournal, str, str], None]


def change_payload(raw: RawJournal, first: str, _second: str) -> None:
    """A valid payload with one value changed; the checksum is left as it was."""
    body = raw.read(first)
    payload = body["payload"]
    if "labels" in payload:
        payload["labels"] = {node: not relevant for node, relevant in payload["labels"].items()}
    else:
        payload["query"] = "What is alice's password?"
    raw.write(first, body)


def change_checksum(raw: RawJournal, first: str, _second: str) -> None:
    body = raw.read(first)
    body["checksum"] = hashlib.sha256(b"another record").hexdigest()
    raw.write(first, body)


def swap_records(raw: RawJournal, first: str, second: str) -> None:
    """Each record stored under the other's key: the listing order no longer matches ids."""
    a, b = raw.read(first), raw.read(second)
    raw.write(first, b)
    raw.write(second, a)


def swap_contents(raw: RawJournal, first: str, second: str) -> None:
    """Payloads and checksums exchanged, ids left in place: only a checksum over the id
    (and not only the payload) tells."""
    a, b = raw.read(first), raw.read(second)
    for body, other in ((a, b), (b, a)):
        raw.write(body["id"], {**other, "id": body["id"], "subject_id": body["subject_id"]})


TAMPERS: dict[str, Tamper] = {
    "payload": change_payload,
    "checksum": change_checksum,
    "swapped_records": swap_records,
    "swapped_contents": swap_contents,
}


def refused(response: Any) -> bool:
    return bool(response.status_code == 500 and response.json() == REFUSED)


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_tampered_receipt_is_refused_on_read_replay_and_use(api: Api, tamper: str) -> None:
    journal = alice_journal(api)
    rid = journal.receipts[0]
    reads = [f"/v1/retrievals/{rid}", f"/v1/retrievals/{rid}/replay"]
    for path in reads:
        assert api.client.get(path, headers=api.alice).status_code == 200, path

    TAMPERS[tamper](RawJournal(api, ALICE), *journal.receipts)

    for path in reads:
        assert refused(api.client.get(path, headers=api.alice)), path
    resolve = api.client.post(
        f"/v1/retrievals/{rid}/resolve-tool-arguments",
        json={"arguments": {"city": "Oslo"}},
        headers=api.alice,
    )
    assert refused(resolve)


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_tampered_relevance_record_is_refused_on_read_and_listing(api: Api, tamper: str) -> None:
    journal = alice_journal(api)
    first, second = journal.relevance
    reads = [
        ("/v1/relevance", {}),
        (f"/v1/relevance/{first}", {}),
        ("/v1/relevance", {"limit": 1}),
    ]
    for path, params in reads:
        assert api.client.get(path, params=params, headers=api.alice).status_code == 200

    TAMPERS[tamper](RawJournal(api, ALICE), f"relevance:{first}", f"relevance:{second}")

    for path, params in reads:
        assert refused(api.client.get(path, params=params, headers=api.alice)), (path, params)
    if tamper == "swapped_records":
        # A page that starts after the first record still holds the first one's body.
        later = api.client.get("/v1/relevance", params={"after_id": first}, headers=api.alice)
        assert refused(later)
    # Bob's journal is untouched and still reads.
    assert api.client.get("/v1/relevance", headers=api.bob).status_code == 200


def test_records_written_before_full_checksums_still_verify(api: Api) -> None:
    """A record with the first checksum (operation, subject and payload only) reads as before;
    changing its payload is still refused."""
    journal = alice_journal(api)
    raw, record_id = RawJournal(api, ALICE), f"relevance:{journal.relevance[0]}"
    body = raw.read(record_id)
    del body["checksum_version"]
    legacy = {k: body[k] for k in ("operation", "subject_id", "payload")}
    canonical = json.dumps(legacy, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body["checksum"] = hashlib.sha256(canonical.encode()).hexdigest()
    raw.write(record_id, body)
    path = f"/v1/relevance/{journal.relevance[0]}"
    response = api.client.get(path, headers=api.alice)
    assert response.status_code == 200, response.text
    assert response.json()["feedback_id"] == journal.relevance[0]

    change_payload(raw, record_id, "")
    assert refused(api.client.get(path, headers=api.alice))


@pytest.mark.parametrize("tamper", ["payload", "swapped_records"])
def test_a_tampered_operation_stays_in_a_nodes_history_flagged_unverified(
    api: Api, tamper: str
) -> None:
    c = api.client
    nodes = [
        c.post("/v1/store", json={"content": text}, headers=api.alice).json()["node_id"]
        for text in ("Alice sits by the window", "Alice takes the 8:15 train")
    ]
    moves = []
    for node in nodes:
        assert c.put(f"/v1/nodes/{node}/promote", headers=api.alice).status_code == 200
        history = c.get(f"/v1/nodes/{node}/provenance", headers=api.alice).json()
        [move] = [o for o in history["operations"] if o["operation"] == "node_promote"]
        moves.append(move["record_id"])
    raw = RawJournal(api, ALICE)
    if tamper == "payload":
        body = raw.read(moves[0])
        body["payload"]["to_state"] = "archived"
        raw.write(moves[0], body)
    else:
        swap_records(raw, *moves)

    history = c.get(f"/v1/nodes/{nodes[0]}/provenance", headers=api.alice)
    assert history.status_code == 200, history.text
    verified = {o["operation"]: o["verified"] for o in history.json()["operations"]}
    assert verified == {"direct_store": True, "node_promote": False}
