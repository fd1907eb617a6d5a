"""`DynamoDbLedger` against moto's DynamoDB over HTTP, plus stubbed throttling and outages."""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from prme.backends.aws import resources
from prme.backends.aws.dynamodb_ledger import RECEIPT_SHARDS, DynamoDbLedger
from prme.errors import (
    ConflictError,
    PayloadTooLargeError,
    RetryableStorageError,
    StorageUnavailableError,
)
from prme.model.enums import (
    CredentialRole,
    WorkStatus,
)
from prme.model.records import (
    Credential,
    IdempotencyRecord,
    JournalRecord,
    OwnerKey,
)
from prme.ports import CredentialStore, Ledger
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, TOKEN_COUNTER
from tests.harness.ledger_commits import T0, make_commit


def dynamodb_ledger(client: Any, table: str) -> DynamoDbLedger:
    """The ledger the engine tests run on: a moto client and a fresh table."""
    return DynamoDbLedger(client, table)


@pytest.fixture
def table(dynamodb_table: tuple[Any, str]) -> tuple[Any, str]:
    return dynamodb_table


@pytest.fixture
def ledger(dynamodb_table: tuple[Any, str]) -> DynamoDbLedger:
    client, name = dynamodb_table
    return dynamodb_ledger(client, name)


def raw_item(table: tuple[Any, str], pk: str, sk: str) -> dict[str, Any] | None:
    client, name = table
    item: dict[str, Any] | None = client.get_item(
        TableName=name, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
    ).get("Item")
    return item


def test_adapter_matches_both_ports(ledger: DynamoDbLedger) -> None:
    # mypy checks these assignments structurally against the Protocols.
    as_ledger: Ledger = ledger
    as_store: CredentialStore = ledger
    ports: list[object] = [as_ledger, as_store]
    assert ports == [ledger, ledger]


def test_engine_stores_and_processes_on_dynamodb(ledger: DynamoDbLedger) -> None:
    from prme.backends.clock import ManualClock
    from prme.backends.memory import InMemoryIndex, RecordingWorkQueue
    from prme.embedding.hashing import HashingEmbedder
    from prme.engine.deps import EngineDeps
    from prme.engine.service import MemoryEngine
    from prme.model.enums import ProcessingStatus
    from prme.model.inputs import StoreInput

    index = InMemoryIndex()
    deps = EngineDeps(
        ledger=ledger,
        index=index,
        queue=RecordingWorkQueue(),
        embedder=HashingEmbedder(),
        clock=ManualClock(),
        token_counter=TOKEN_COUNTER,
    )
    engine = MemoryEngine(deps)
    index.available = False

    result = engine.store(ALICE, StoreInput(content="I adopted a dog named Rex."))
    assert result.processing_status is ProcessingStatus.PENDING
    assert ledger.count_pending_work(ALICE) == 1

    index.available = True
    engine.process_materializations(ALICE)
    status, work = engine.get_processing_status(ALICE, result.event_id)
    assert status is ProcessingStatus.COMPLETED
    assert [w.status for w in work] == [WorkStatus.DONE]
    assert ledger.count_pending_work(None) == 0

    again = StoreInput(content="Rex likes the park.")
    replayed = engine.store(ALICE, again, idempotency_key="k1")
    assert engine.store(ALICE, again, idempotency_key="k1") == replayed


# -- commit and reads ---------------------------------------------------------------------


def test_commit_then_every_record_reads_back(ledger: DynamoDbLedger) -> None:
    commit = make_commit(ALICE, 1)

    ledger.commit_store(commit)

    assert ledger.get_event(ALICE, commit.event.id) == commit.event
    assert ledger.get_node(ALICE, commit.node.id) == commit.node
    assert ledger.list_event_nodes(ALICE, commit.event.id) == [commit.node]
    assert ledger.list_event_work(ALICE, commit.event.id) == [commit.work]
    assert ledger.get_journal(ALICE, commit.journal.id) == commit.journal
    assert ledger.get_event(ALICE, "ev-missing") is None
    assert ledger.get_node(ALICE, "node-missing") is None
    assert ledger.list_event_nodes(ALICE, "ev-missing") == []


def test_get_nodes_and_event_nodes_span_batch_pages(ledger: DynamoDbLedger) -> None:
    # Given nodes citing one shared event, committed out of created_at order
    count = 6
    for n in range(count):
        at = T0 + timedelta(seconds=(n * 5) % count)
        ledger.commit_store(make_commit(ALICE, n, at=at, extra_evidence=("ev-shared",)))
    ids = [f"node-{n:04d}" for n in range(count)]
    # (moto copies the table on every transaction, so unknown ids pad the request instead
    # of hundreds of commits; known ids sit in both BatchGetItem pages.)
    unknown = [f"node-unknown-{i}" for i in range(240)]
    wanted = [*ids[:3], *unknown, *ids[3:], ids[0]]

    # When more than two pages of ids are read (with a duplicate and unknown ids)
    found = ledger.get_nodes(ALICE, wanted)

    # Then every known node comes back once, and the event's nodes are ordered by created_at, id
    assert sorted(found) == ids
    listed = ledger.list_event_nodes(ALICE, "ev-shared")
    assert listed == sorted(found.values(), key=lambda n: (n.created_at, n.id))
    assert [n.id for n in listed] != ids  # the order really came from created_at
    assert ledger.get_nodes(ALICE, []) == {}


def test_duplicate_commit_conflicts_and_writes_nothing(ledger: DynamoDbLedger) -> None:
    first = make_commit(ALICE, 1)
    ledger.commit_store(first)
    again = make_commit(ALICE, 2, event_id=first.event.id, content="something else")

    with pytest.raises(ConflictError):
        ledger.commit_store(again)

    event = ledger.get_event(ALICE, first.event.id)
    assert event is not None and event.content == first.event.content
    assert ledger.get_node(ALICE, again.node.id) is None
    assert ledger.get_journal(ALICE, again.journal.id) is None
    assert ledger.list_event_work(ALICE, first.event.id) == [first.work]
    assert ledger.list_event_nodes(ALICE, first.event.id) == [first.node]
    assert ledger.count_pending_work(None) == 1


def idempotency(owner: OwnerKey, key: str, event_id: str) -> IdempotencyRecord:
    return IdempotencyRecord(
        tenant_id=owner.tenant_id,
        owner_id=owner.owner_id,
        operation="store",
        key=key,
        request_sha256="1" * 64,
        result={"event_id": event_id},
        created_at=T0,
        expires_at=T0 + timedelta(days=7),
    )


def test_idempotency_record_commits_with_the_store(
    ledger: DynamoDbLedger, table: tuple[Any, str]
) -> None:
    first = make_commit(ALICE, 1).model_copy(
        update={"idempotency": idempotency(ALICE, "key#1", "ev-0001")}
    )
    ledger.commit_store(first)
    reused = make_commit(ALICE, 2).model_copy(
        update={"idempotency": idempotency(ALICE, "key#1", "ev-0002")}
    )

    with pytest.raises(ConflictError):
        ledger.commit_store(reused)

    assert ledger.get_idempotency(ALICE, "store", "key#1") == first.idempotency
    assert ledger.get_event(ALICE, "ev-0002") is None
    assert ledger.get_idempotency(BOB, "store", "key#1") is None
    # A key is the owner's across every operation.
    assert ledger.get_idempotency(ALICE, "other", "key#1") == first.idempotency
    stored = raw_item(table, "T#t1#O#alice", "IDEMP#key%231")
    assert stored is not None
    expiry = int((T0 + timedelta(days=7)).timestamp())
    assert stored[resources.TTL_ATTRIBUTE] == {"N": str(expiry)}
    # The same key under another owner is that owner's own.
    ledger.commit_store(
        make_commit(BOB, 3).model_copy(update={"idempotency": idempotency(BOB, "key#1", "x")})
    )


def test_a_record_of_the_per_operation_layout_still_replays(
    ledger: DynamoDbLedger, table: tuple[Any, str]
) -> None:
    # Given a record written when keys were unique per operation (before the upgrade)
    client, name = table
    old = idempotency(ALICE, "key#2", "ev-0001")
    client.put_item(
        TableName=name,
        Item={
            "pk": {"S": "T#t1#O#alice"},
            "sk": {"S": "IDEMP#store#key%232"},
            "kind": {"S": "idempotency"},
            "body": {"S": old.model_dump_json()},
        },
    )
    # Then a retry of that operation still finds it; a new record under the key wins.
    assert ledger.get_idempotency(ALICE, "store", "key#2") == old
    assert ledger.get_idempotency(ALICE, "ingest", "key#2") is None
    newer = idempotency(ALICE, "key#2", "ev-0002")
    ledger.commit_store(make_commit(ALICE, 2).model_copy(update={"idempotency": newer}))
    assert ledger.get_idempotency(ALICE, "store", "key#2") == newer


def test_expiring_nodes_get_a_ttl_only_when_asked(table: tuple[Any, str]) -> None:
    client, name = table
    base = make_commit(ALICE, 1)
    expiring = base.model_copy(
        update={"node": base.node.model_copy(update={"expires_at": T0 + timedelta(days=1)})}
    )
    DynamoDbLedger(client, name).commit_store(expiring)
    other = make_commit(BOB, 1)
    other = other.model_copy(update={"node": expiring.node.model_copy(update={"owner_id": "bob"})})
    DynamoDbLedger(client, name, node_ttl_grace=timedelta(days=30)).commit_store(other)

    kept = raw_item(table, "T#t1#O#alice", "NODE#node-0001")
    deleted_later = raw_item(table, "T#t1#O#bob", "NODE#node-0001")

    assert kept is not None and resources.TTL_ATTRIBUTE not in kept
    assert deleted_later is not None
    expiry = int((T0 + timedelta(days=31)).timestamp())
    assert deleted_later[resources.TTL_ATTRIBUTE] == {"N": str(expiry)}


# -- pending work -------------------------------------------------------------------------


def test_pending_work_per_owner_and_across_owners(
    ledger: DynamoDbLedger, table: tuple[Any, str]
) -> None:
    # Given work for three owners in two tenants, interleaved in time
    owners = [ALICE, BOB, OTHER_TENANT_ALICE]
    commits = [
        make_commit(owners[n % 3], n, at=T0 + timedelta(minutes=(n * 7) % 12)) for n in range(12)
    ]
    for commit in commits:
        ledger.commit_store(commit)
    oldest_first = sorted((c.work for c in commits), key=lambda w: (w.created_at, w.id))

    # Then each listing is oldest first and honours the limit
    assert ledger.list_pending_work(None, 100) == oldest_first
    assert ledger.list_pending_work(None, 5) == oldest_first[:5]
    assert ledger.list_pending_work(None, 0) == []
    alice = [w for w in oldest_first if w.owner_id == "alice" and w.tenant_id == "t1"]
    assert ledger.list_pending_work(ALICE, 100) == alice
    assert ledger.list_pending_work(ALICE, 2) == alice[:2]
    assert ledger.count_pending_work(None) == 12
    assert ledger.count_pending_work(ALICE) == 4
    assert ledger.count_pending_work(OwnerKey(tenant_id="t1", owner_id="nobody")) == 0

    # When one item is done and another goes back to pending after a failed attempt
    done = alice[0].model_copy(update={"status": WorkStatus.DONE, "updated_at": T0})
    ledger.save_work(done)
    retried = alice[1].model_copy(update={"attempts": 1, "last_error": "index_unavailable"})
    ledger.save_work(retried)

    # Then the done item leaves both indexes, the retried one stays with its new state
    assert ledger.list_pending_work(ALICE, 100) == [retried, *alice[2:]]
    assert done not in ledger.list_pending_work(None, 100)
    assert ledger.count_pending_work(None) == 11
    assert ledger.count_pending_work(ALICE) == 3
    assert ledger.list_event_work(ALICE, done.event_id) == [done]
    stored = raw_item(table, "T#t1#O#alice", f"WORK#{done.event_id}#{done.id}")
    assert stored is not None
    assert not {"op_pk", "op_sk", "pw_pk", "pw_sk"} & set(stored)
    assert stored["status"] == {"S": "done"}


def test_save_work_of_unknown_item_writes_nothing(ledger: DynamoDbLedger) -> None:
    ghost = make_commit(ALICE, 1).work

    ledger.save_work(ghost)

    assert ledger.list_event_work(ALICE, ghost.event_id) == []
    assert ledger.count_pending_work(None) == 0


# -- journal and isolation ----------------------------------------------------------------


def test_journal_append_duplicate_and_get(ledger: DynamoDbLedger) -> None:
    record = JournalRecord.build(
        record_id="jr-x",
        owner=ALICE,
        operation="feedback",
        subject_id="node-1",
        created_at=T0,
        payload={"useful": True},
    )
    ledger.append_journal(record)

    with pytest.raises(ConflictError):
        ledger.append_journal(record.model_copy(update={"operation": "other"}))

    stored = ledger.get_journal(ALICE, "jr-x")
    assert stored == record and stored.verify()
    assert ledger.get_journal(BOB, "jr-x") is None
    assert ledger.get_journal(ALICE, "jr-missing") is None


def _receipt_shard(record_id: str) -> int:
    digest = hashlib.sha256(record_id.encode()).digest()
    return int.from_bytes(digest[:4], "big") % RECEIPT_SHARDS


def test_an_expiring_journal_record_gets_the_ttl_attribute(table: tuple[Any, str]) -> None:
    ledger = dynamodb_ledger(*table)
    for record_id, expires_at in (("kept", None), ("receipt", T0 + timedelta(days=30))):
        ledger.append_journal(
            JournalRecord.build(
                record_id=record_id,
                owner=ALICE,
                operation="retrieval_receipt",
                subject_id=record_id,
                created_at=T0,
                payload={},
                expires_at=expires_at,
            )
        )
    # Receipts sit on the owner's receipt shards (see test_dynamodb_receipt_shards.py).
    kept = raw_item(table, f"T#t1#O#alice#RECEIPTS#{_receipt_shard('kept')}", "JOURNAL#kept")
    assert kept is not None and resources.TTL_ATTRIBUTE not in kept
    expiring = raw_item(
        table, f"T#t1#O#alice#RECEIPTS#{_receipt_shard('receipt')}", "JOURNAL#receipt"
    )
    expiry = int((T0 + timedelta(days=30)).timestamp())
    assert expiring is not None and expiring[resources.TTL_ATTRIBUTE] == {"N": str(expiry)}
    stored = ledger.get_journal(ALICE, "receipt")
    assert stored is not None and stored.verify()
    # The expiry is covered by the checksum: moving it makes the record fail verification.
    assert not stored.model_copy(update={"expires_at": T0 + timedelta(days=90)}).verify()


def test_other_owners_and_tenants_read_nothing(ledger: DynamoDbLedger) -> None:
    commit = make_commit(ALICE, 1)
    ledger.commit_store(commit)

    # Ids that would collide if `#` were not escaped in the partition key.
    tricky = [
        OwnerKey(tenant_id="t1#O#alice", owner_id="x"),
        OwnerKey(tenant_id="t1", owner_id="alice#O#x"),
    ]
    for owner in (BOB, OTHER_TENANT_ALICE, *tricky):
        assert ledger.get_event(owner, commit.event.id) is None
        assert ledger.get_node(owner, commit.node.id) is None
        assert ledger.get_nodes(owner, [commit.node.id]) == {}
        assert ledger.list_event_nodes(owner, commit.event.id) == []
        assert ledger.list_event_work(owner, commit.event.id) == []
        assert ledger.get_journal(owner, commit.journal.id) is None
        assert ledger.list_pending_work(owner, 10) == []
        assert ledger.count_pending_work(owner) == 0
    # The same ids under another owner are that owner's own records.
    ledger.commit_store(make_commit(tricky[0], 1))
    assert ledger.get_event(ALICE, commit.event.id) == commit.event
    assert ledger.count_pending_work(ALICE) == 1


def test_event_ids_sharing_a_prefix_stay_apart(ledger: DynamoDbLedger) -> None:
    ledger.commit_store(make_commit(ALICE, 1, event_id="ev"))
    ledger.commit_store(make_commit(ALICE, 2, event_id="ev#2"))

    assert [n.id for n in ledger.list_event_nodes(ALICE, "ev")] == ["node-0001"]
    assert [w.id for w in ledger.list_event_work(ALICE, "ev")] == ["work-0001"]


# -- credentials --------------------------------------------------------------------------


def credential(key_id: str, tenant: str, at: datetime = T0) -> Credential:
    return Credential(
        key_id=key_id,
        key_hash=f"hash-{key_id}",
        tenant_id=tenant,
        owner_id=None,
        role=CredentialRole.OPERATOR,
        created_at=at,
    )


def test_credentials_put_find_list_and_revoke(ledger: DynamoDbLedger) -> None:
    ledger.commit_store(make_commit(ALICE, 1))  # other kinds of items share the table
    k1, k2, k3 = (
        credential("k1", "t1", T0 + timedelta(seconds=2)),
        credential("k2", "t1", T0),
        credential("k3", "t2", T0 + timedelta(seconds=1)),
    )
    for c in (k1, k2, k3):
        ledger.put_credential(c)

    assert ledger.find_credential("hash-k1") == k1
    assert ledger.find_credential("hash-unknown") is None
    assert ledger.list_credentials("t1") == [k2, k1]
    assert ledger.list_credentials("t3") == []
    assert ledger.list_credentials(None) == [k2, k3, k1]
    with pytest.raises(ConflictError):
        ledger.put_credential(k1.model_copy(update={"key_hash": "hash-new"}))
    with pytest.raises(ConflictError):
        ledger.put_credential(k1.model_copy(update={"key_id": "k9"}))
    assert ledger.find_credential("hash-new") is None

    first = ledger.revoke_credential("k1", T0 + timedelta(hours=1))
    second = ledger.revoke_credential("k1", T0 + timedelta(hours=2))

    assert first is not None and first.revoked_at == T0 + timedelta(hours=1)
    assert second == first
    assert ledger.find_credential("hash-k1") == first
    assert ledger.list_credentials("t1") == [k2, first]
    assert ledger.revoke_credential("k-unknown", T0) is None


# -- limits -------------------------------------------------------------------------------


def _incompressible(chars: int) -> str:
    """Text that zlib cannot shrink much (bodies are stored compressed): random CJK."""
    rng = random.Random(19)
    return "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(chars))


def test_item_over_the_size_limit_is_refused_before_any_write(ledger: DynamoDbLedger) -> None:
    big = make_commit(ALICE, 1, content=_incompressible(resources.MAX_ITEM_BYTES))

    with pytest.raises(PayloadTooLargeError):
        ledger.commit_store(big)

    assert ledger.get_event(ALICE, big.event.id) is None
    assert ledger.get_journal(ALICE, big.journal.id) is None
    assert ledger.count_pending_work(None) == 0
    huge_journal = big.journal.model_copy(
        update={"payload": {"text": _incompressible(resources.MAX_ITEM_BYTES)}}
    )
    with pytest.raises(PayloadTooLargeError):
        ledger.append_journal(huge_journal)
    assert ledger.get_journal(ALICE, big.journal.id) is None


def test_transaction_over_the_action_limit_is_refused(ledger: DynamoDbLedger) -> None:
    refs = tuple(f"ev-other-{i}" for i in range(resources.MAX_TRANSACTION_ITEMS))
    commit = make_commit(ALICE, 1, extra_evidence=refs)

    with pytest.raises(PayloadTooLargeError):
        ledger.commit_store(commit)

    assert ledger.get_event(ALICE, commit.event.id) is None


# -- failures -----------------------------------------------------------------------------


def stubbed_client() -> Any:
    return boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}),
    )


def recording_ledger(client: Any) -> tuple[DynamoDbLedger, list[float]]:
    sleeps: list[float] = []
    ledger = DynamoDbLedger(client, "stubbed", sleep=sleeps.append, jitter=lambda: 0.5)
    return ledger, sleeps


EVENT = make_commit(ALICE, 1).event
EVENT_ITEM = {"Item": {"pk": {"S": "x"}, "sk": {"S": "y"}, "body": {"S": EVENT.model_dump_json()}}}


def test_throttling_is_retried_with_growing_backoff() -> None:
    client = stubbed_client()
    ledger, sleeps = recording_ledger(client)
    with Stubber(client) as stub:
        for _ in range(3):
            stub.add_client_error("get_item", "ProvisionedThroughputExceededException")
        stub.add_response("get_item", EVENT_ITEM)

        assert ledger.get_event(ALICE, EVENT.id) == EVENT

        stub.assert_no_pending_responses()
    assert len(sleeps) == 3
    assert sleeps == sorted(sleeps) and sleeps[0] > 0


def test_throttling_that_outlasts_the_retries_is_retryable() -> None:
    client = stubbed_client()
    ledger, sleeps = recording_ledger(client)
    with Stubber(client) as stub:
        for _ in range(5):
            stub.add_client_error("get_item", "ThrottlingException")

        with pytest.raises(RetryableStorageError) as caught:
            ledger.get_event(ALICE, EVENT.id)

    assert len(sleeps) == 4
    assert caught.value.detail == RetryableStorageError.default_detail


def cancelled(stub: Stubber, *reasons: str) -> None:
    stub.add_client_error(
        "transact_write_items",
        "TransactionCanceledException",
        modeled_fields={"CancellationReasons": [{"Code": r} for r in reasons]},
    )


def test_transaction_conflicts_are_retried_but_failed_conditions_are_not() -> None:
    client = stubbed_client()
    ledger, sleeps = recording_ledger(client)
    commit = make_commit(ALICE, 1)
    with Stubber(client) as stub:
        cancelled(stub, "None", "TransactionConflict", "None", "None", "None")
        cancelled(stub, "ThrottlingError", "None", "None", "None", "None")
        stub.add_response("transact_write_items", {})
        ledger.commit_store(commit)
        assert len(sleeps) == 2

        cancelled(stub, "ConditionalCheckFailed", "None", "None", "None", "None")
        # The journal record is not ours (in the owner's partition nor on a receipt shard).
        stub.add_response("get_item", {})
        stub.add_response("get_item", {})
        with pytest.raises(ConflictError):
            ledger.commit_store(commit)
        cancelled(stub, "ValidationError", "None", "None", "None", "None")
        with pytest.raises(StorageUnavailableError):
            ledger.commit_store(commit)
    assert len(sleeps) == 2


def test_each_transaction_attempt_carries_a_client_request_token() -> None:
    """botocore resends a request whose answer was lost with the same token, so DynamoDB
    answers a committed transaction as a success; our retries after a definite failure
    (cancelled or throttled: nothing written) send a new one."""
    client = stubbed_client()
    ledger, _ = recording_ledger(client)
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "before-parameter-build.dynamodb.TransactWriteItems",
        lambda params, **_: sent.append(dict(params)),
    )
    with Stubber(client) as stub:
        cancelled(stub, "None", "TransactionConflict", "None", "None", "None")
        stub.add_response("transact_write_items", {})
        ledger.commit_store(make_commit(ALICE, 1))
    tokens = [params["ClientRequestToken"] for params in sent]
    assert len(tokens) == 2 and len(set(tokens)) == 2
    assert all(uuid.UUID(token) for token in tokens)


def test_a_commit_whose_answer_was_lost_is_not_a_conflict_on_retry() -> None:
    """The SDK retried a transaction that had committed: every condition fails on our own
    records. The journal record stored exactly as sent shows the write is ours."""
    client = stubbed_client()
    ledger, _ = recording_ledger(client)
    commit = make_commit(ALICE, 1)
    journal = {
        "Item": {
            "pk": {"S": "x"},
            "sk": {"S": "y"},
            "body": {"S": commit.journal.model_dump_json()},
        }
    }
    with Stubber(client) as stub:
        cancelled(stub, *["ConditionalCheckFailed"] * 5)
        stub.add_response("get_item", journal)
        ledger.commit_store(commit)  # no ConflictError
        stub.assert_no_pending_responses()


def test_unprocessed_batch_keys_are_fetched_again() -> None:
    client = stubbed_client()
    ledger, sleeps = recording_ledger(client)
    node = make_commit(ALICE, 1).node
    key = {"pk": {"S": "T#t1#O#alice"}, "sk": {"S": f"NODE#{node.id}"}}
    with Stubber(client) as stub:
        stub.add_response(
            "batch_get_item",
            {
                "Responses": {"stubbed": []},
                "UnprocessedKeys": {"stubbed": {"Keys": [key], "ConsistentRead": True}},
            },
        )
        stub.add_response(
            "batch_get_item",
            {"Responses": {"stubbed": [{**key, "body": {"S": node.model_dump_json()}}]}},
        )

        assert ledger.get_nodes(ALICE, [node.id]) == {node.id: node}
    assert len(sleeps) == 1


@pytest.mark.parametrize(
    "action",
    [
        lambda ledger: ledger.get_event(ALICE, "ev-1"),
        lambda ledger: ledger.commit_store(make_commit(ALICE, 1)),
        lambda ledger: ledger.list_pending_work(None, 10),
    ],
    ids=["read", "commit", "index"],
)
def test_unreachable_endpoint_is_storage_unavailable(
    action: Callable[[DynamoDbLedger], object],
) -> None:
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(connect_timeout=1, read_timeout=1, retries={"max_attempts": 1}),
    )
    ledger, sleeps = recording_ledger(client)

    with pytest.raises(StorageUnavailableError) as caught:
        action(ledger)

    assert type(caught.value) is StorageUnavailableError
    assert caught.value.detail == StorageUnavailableError.default_detail
    assert caught.value.__cause__ is not None
    assert sleeps == []


def test_missing_table_is_storage_unavailable(table: tuple[Any, str]) -> None:
    client, name = table
    ledger = DynamoDbLedger(client, f"{name}-missing")

    with pytest.raises(StorageUnavailableError) as caught:
        ledger.get_event(ALICE, "ev-1")

    assert type(caught.value) is StorageUnavailableError
    assert "ResourceNotFound" not in str(caught.value)
