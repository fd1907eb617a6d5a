"""`DynamoDbLedger`: the ledger and the API keys in one DynamoDB table (single-table design).

Each port call is one request or one TransactWriteItems; throttling is retried inside the call.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import random
import re
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from prme.backends.aws import resources
from prme.backends.commit_rule import applied_once
from prme.backends.stored_records import (
    QUARANTINED_WORK_STATUS,
    RecordT,
    load_journal_page,
    load_readable,
    load_record,
    log_quarantined,
    split_readable,
)
from prme.engine.deadlines import remaining_seconds
from prme.errors import (
    ConflictError,
    CorruptRecordError,
    NotFoundError,
    PayloadTooLargeError,
    RetryableStorageError,
    StorageUnavailableError,
)
from prme.model.enums import LifecycleState, NodeType, WorkFamily, WorkStatus
from prme.model.erasure import OwnerErasure, journal_count_field
from prme.model.extraction import stored_assertion_key
from prme.model.graph import NodeHistoryPage, history_position, history_reference_ids
from prme.model.listings import EventDeletion
from prme.model.receipt_listing import ReceiptSummaryPage, RetrievalSummary
from prme.model.records import (
    Credential,
    Event,
    IdempotencyRecord,
    IngestCommit,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
    StoreCommit,
    WorkItem,
)
from prme.retrieval.receipt_summary import summarize_receipt
from prme.retrieval.receipts import RECEIPT_OPERATION

# Low-level client items: attribute name -> {"S": ...} / {"N": ...}.
Item = dict[str, dict[str, Any]]
# The records kept under `<KIND>#<id>` and read back by id, alone or in batches.
_ById = TypeVar("_ById", Event, MemoryNode)

PK, SK = resources.PARTITION_KEY, resources.SORT_KEY
_BATCH_GET_KEYS = 100  # BatchGetItem's limit per request
# Journal records read per Query while looking for one subject's records.
_SUBJECT_SCAN_CHUNK = 500
_THROTTLE_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
_RETRYABLE_TXN_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)
# Reads of a sparse index per listing that may take unreadable items out of it.
_QUARANTINE_ROUNDS = 3
_PENDING_ATTRIBUTES = (
    resources.OWNER_PENDING_PK,
    resources.OWNER_PENDING_SK,
    resources.PENDING_PK,
    resources.PENDING_SK,
)
_NOT_EXISTS = f"attribute_not_exists({PK})"
_EXISTS = f"attribute_exists({PK})"


# The sort key prefix of a receipt's listing entry (see `_receipt_log_item`).
_RECEIPT_LOG_PREFIX = "RCPT#"
# Records deleted per erasure transaction: the rest of the 100 actions is the erasure record.
_ERASE_TRANSACTION_RECORDS = resources.MAX_TRANSACTION_ITEMS - 1
# What an owner's item counts as in an erasure, by the prefix of its sort key.
_ERASED_PREFIXES = (
    ("EVENT#", "events"),
    ("NODE#", "nodes"),
    ("EVNODE#", "node_links"),
    ("ASSERT#", "node_links"),
    ("EDGE#", "edges"),
    ("WORK#", "work_items"),
    ("IDEMP#", "idempotency_records"),
    ("NODEOP#", "node_links"),
    # A receipt's listing entry is part of the receipt, which is counted once.
    (_RECEIPT_LOG_PREFIX, ""),
)


# Sort keys hold at most 1,024 bytes: an assertion key longer than this (a long subject in a
# script of multi-byte letters) is named by its digest, which never contains the `|` every
# readable key has, so the two forms cannot collide.
_ASSERTION_PART_BYTES = 600


def _assertion_part(assertion_key: str) -> str:
    part = _part(assertion_key)
    if len(part.encode()) <= _ASSERTION_PART_BYTES:
        return part
    return "sha256=" + hashlib.sha256(assertion_key.encode()).hexdigest()


def _assertion_link(pk: str, node: MemoryNode) -> Item | None:
    """The item that finds an extracted claim by its assertion key, newest first by sort key."""
    key = stored_assertion_key(node.metadata)
    if key is None:
        return None
    return {
        **_key(pk, f"ASSERT#{_assertion_part(key)}#{_sortable(node.created_at)}#{_part(node.id)}"),
        "kind": {"S": "assertion_node"},
        "assertion_key": {"S": key},
        "node_id": {"S": node.id},
    }


def _erased_field(item: dict[str, Any]) -> str:
    """The `ErasureCounts` field an owner's item is counted under when erased."""
    sort_key = str(item[SK]["S"])
    for prefix, field in _ERASED_PREFIXES:
        if sort_key.startswith(prefix):
            return field
    try:
        operation = json.loads(_unpacked(item.get("body", {"S": ""})))["operation"]
    except (ValueError, KeyError, TypeError):
        operation = ""
    # Journal records, unreadable ones and any kind this version does not know.
    return journal_count_field(str(operation))


class _Failure(Enum):
    CONFLICT = "conflict"
    THROTTLED = "throttled"
    OTHER = "other"


def _part(value: str) -> str:
    """Escape `#` (and the escape itself) so composed keys stay unambiguous for any id."""
    return value.replace("%", "%25").replace("#", "%23")


# The greatest code point: its UTF-8 bytes sort after every other character's.
_HIGHEST_CHARACTER = "\U0010ffff"


def _owner_pk(tenant_id: str, owner_id: str) -> str:
    return f"T#{_part(tenant_id)}#O#{_part(owner_id)}"


_ESCAPED = re.compile("%(23|25)")


def _unpart(value: str) -> str:
    """The id `_part` escaped."""
    return _ESCAPED.sub(lambda m: "#" if m.group(1) == "23" else "%", value)


def _pk_of(owner: OwnerKey) -> str:
    return _owner_pk(owner.tenant_id, owner.owner_id)


def _sortable(moment: datetime) -> str:
    # Fixed width and UTC, so string order is time order whatever offset the caller used.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _owner_pending_pk(owner_pk: str, family: WorkFamily) -> str:
    # Each other family (extraction, alias scans) sits under its own keys: a pass of
    # one family never reads another's work.
    return owner_pk if family == "materialize" else f"{owner_pk}#{family.upper()}"


def _pending_pk(family: WorkFamily, shard: int) -> str:
    return f"PENDING#{shard}" if family == "materialize" else f"{family.upper()}#{shard}"


def _shard(work_id: str) -> int:
    # Python's hash() is salted per process; the shard must be the same in every process.
    digest = hashlib.sha256(work_id.encode()).digest()
    return int.from_bytes(digest[:4], "big") % resources.PENDING_SHARDS


# Receipts (one per retrieval, the largest journal items) are spread over this many partition
# keys per owner, chosen by their request id: one owner's retrievals are not capped by one
# partition's write throughput (1,000 units a second), and a receipt is still read by its id
# with one GetItem. Changing the number would strand stored receipts: never change it.
RECEIPT_SHARDS = 16


def _receipt_pk(owner_pk: str, record_id: str) -> str:
    digest = hashlib.sha256(record_id.encode()).digest()
    return f"{owner_pk}#RECEIPTS#{int.from_bytes(digest[:4], 'big') % RECEIPT_SHARDS}"


def _receipt_log_pk(owner_pk: str) -> str:
    # One partition per owner: an entry is one small item (about 550 bytes; under 1 KB with the
    # longest query preview), so a partition's 1,000 write units a second is 1,000 retrievals
    # a second of one owner.
    return f"{owner_pk}#RECEIPTLOG"


def _receipt_log_sk(position: str) -> str:
    return f"{_RECEIPT_LOG_PREFIX}{_part(position)}"


def _owner_partitions(owner_pk: str) -> list[str]:
    """Every partition key holding an owner's items: its own, its receipt shards and its
    receipt listing."""
    shards = [f"{owner_pk}#RECEIPTS#{shard}" for shard in range(RECEIPT_SHARDS)]
    return [owner_pk, *shards, _receipt_log_pk(owner_pk)]


def _key(pk: str, sk: str) -> Item:
    return {PK: {"S": pk}, SK: {"S": sk}}


def _idempotency_sk(key: str) -> str:
    # One item per owner and key, whatever the operation: the conditional put then refuses
    # a key that another route already used.
    return f"IDEMP#{_part(key)}"


def _legacy_idempotency_sk(operation: str, key: str) -> str:
    """Where records were kept while a key was unique per operation only. Such records
    expire with their TTL (`IDEMPOTENCY_TTL` after they were written); until then reads
    still find them, so a retry that straddles an upgrade replays instead of writing twice."""
    return f"IDEMP#{_part(operation)}#{_part(key)}"


def _item_size(item: Item) -> int:
    """DynamoDB's item size: attribute names plus values (text in UTF-8, numbers as text,
    binary as its bytes)."""
    total = 0
    for name, value in item.items():
        total += len(name.encode())
        total += sum(len(v) if isinstance(v, bytes) else len(v.encode()) for v in value.values())
    return total


# Record bodies are JSON of a few hundred bytes to tens of KB, mostly field names, ids and
# timestamps that repeat: zlib halves them or better. Write units are billed per started KB
# (twice inside a transaction), so a store's node and journal items drop from 2 KB to 1 KB
# each and a receipt to about a third. Bodies written before this are text ("S") and read as
# they are; compressed ones are binary ("B").
_COMPRESSION_LEVEL = 6
# No stored item exceeds 400 KB, and JSON compresses at most about a hundredfold: a body that
# inflates beyond this is damaged (or hostile) and reads as unreadable instead.
_MAX_INFLATED_BODY = 64 * resources.MAX_ITEM_BYTES
# A node item's digest of its body text (see `_body_digest`).
_DIGEST = "body_hash"


def _packed(text: str) -> dict[str, Any]:
    """The stored value of a record body."""
    return {"B": zlib.compress(text.encode(), _COMPRESSION_LEVEL)}


def _unpacked(value: dict[str, Any]) -> str:
    """The text of a stored body, compressed or not. A damaged one reads as empty text, which
    fails to load like any other broken body."""
    if "S" in value:
        return str(value["S"])
    try:
        inflater = zlib.decompressobj()
        text = inflater.decompress(bytes(value.get("B", b"")), _MAX_INFLATED_BODY)
        if inflater.unconsumed_tail or not inflater.eof:
            return ""
        return text.decode()
    except (zlib.error, UnicodeDecodeError, TypeError):
        return ""


def _body_digest(text: str) -> dict[str, Any]:
    """What a node's conditional replace compares instead of its compressed body: compressed
    bytes of equal text may differ between zlib builds, a digest of the text never does."""
    return {"B": hashlib.sha256(text.encode()).digest()[:16]}


def _body(item: dict[str, Any]) -> str:
    return _unpacked(item["body"])


def _stored(item: dict[str, Any]) -> tuple[str, str]:
    """`(record id, body)` of an item; the id is the last part of its sort key. A missing
    body reads as an empty one, which fails to load like any other broken body."""
    record_id = str(item[SK]["S"]).rsplit("#", 1)[-1].replace("%23", "#").replace("%25", "%")
    return record_id, _unpacked(item.get("body", {"S": ""}))


def _history_sk(node_id: str, position: str) -> str:
    return f"NODEOP#{_part(node_id)}#{_part(position)}"


def _delete(key: Item) -> tuple[str, Item, dict[str, Any]]:
    return ("Delete", key, {"Key": key})


def _failure_of(exc: ClientError) -> _Failure:
    error = exc.response.get("Error", {})
    code = error.get("Code", "")
    if code == "ConditionalCheckFailedException":
        return _Failure.CONFLICT
    if code in _THROTTLE_CODES:
        return _Failure.THROTTLED
    if code == "TransactionCanceledException":
        reasons = {r.get("Code", "") for r in exc.response.get("CancellationReasons", [])}
        # A failed condition is final even when another action was throttled.
        if "ConditionalCheckFailed" in reasons:
            return _Failure.CONFLICT
        if reasons & _RETRYABLE_TXN_REASONS:
            return _Failure.THROTTLED
    return _Failure.OTHER


class DynamoDbLedger:
    """Implements the `Ledger` and `CredentialStore` ports on one table.

    Pending work is listed through sparse GSIs; GSI reads are eventually consistent on
    AWS, so a just-committed item may be missing from, or a just-finished one still
    present in, `list_pending_work` / `count_pending_work` for a moment. No re-read is
    done: a stale entry at worst indexes a node again (an idempotent upsert), and a
    missing one is found by the next pass or sweep. moto's GSIs are immediately
    consistent, so the tests cannot show this lag.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        max_attempts: int = 5,
        base_delay_s: float = 0.05,
        max_delay_s: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        node_ttl_grace: timedelta | None = None,
    ) -> None:
        """`node_ttl_grace`: when set, DynamoDB TTL deletes an expiring node that long after
        its `expires_at`; by default expired nodes stay, as in the embedded ledger."""
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._client = client
        self._table = table_name
        self._max_attempts = max_attempts
        self._base_delay_s = base_delay_s
        self._max_delay_s = max_delay_s
        self._sleep = sleep
        self._jitter = jitter
        self._node_ttl_grace = node_ttl_grace

    # -- request plumbing ---------------------------------------------------------------

    def _backoff(self, attempt: int) -> None:
        ceiling = min(self._max_delay_s, self._base_delay_s * 2 ** (attempt - 1))
        # Equal jitter: never zero (so retries really wait) yet spread across callers.
        delay = ceiling / 2 + self._jitter() * ceiling / 2
        remaining = remaining_seconds()
        if remaining is not None and delay >= remaining:
            # Waiting would spend the request's deadline: answer busy now instead.
            raise RetryableStorageError()
        self._sleep(delay)

    def _call(
        self, operation: str, *, request_token: bool = False, **kwargs: Any
    ) -> dict[str, Any]:
        attempt = 1
        while True:
            if request_token:
                # botocore's own retries (timeouts, lost responses) resend this same token, so
                # an attempt that committed but whose answer was lost is answered as a success
                # instead of failing its own conditions. Our retries below follow a definite
                # failure (throttled or cancelled: nothing was written), so each gets a new one.
                kwargs["ClientRequestToken"] = str(uuid.uuid4())
            try:
                # Read per attempt: a deadline-bound client picks timeouts that fit what is left.
                method: Callable[..., dict[str, Any]] = getattr(self._client, operation)
                return method(**kwargs)
            except ClientError as exc:
                failure = _failure_of(exc)
                if failure is _Failure.CONFLICT:
                    raise ConflictError("record already exists") from exc
                if failure is _Failure.OTHER:
                    raise StorageUnavailableError() from exc
                if attempt >= self._max_attempts:
                    raise RetryableStorageError() from exc
            except BotoCoreError as exc:
                # Connection, timeout and credential errors: the client already retried.
                raise StorageUnavailableError() from exc
            self._backoff(attempt)
            attempt += 1

    def _pages(self, operation: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        while True:
            page = self._call(operation, TableName=self._table, **kwargs)
            yield page
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    def _query_items(self, limit: int | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if limit is not None:
            kwargs["Limit"] = limit
        for page in self._pages("query", **kwargs):
            items.extend(page.get("Items", []))
            if limit is not None and len(items) >= limit:
                return items[:limit]
        return items

    def _query_prefix(self, pk: str, prefix: str) -> list[dict[str, Any]]:
        return self._query_items(
            KeyConditionExpression="#pk = :pk AND begins_with(#sk, :prefix)",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={":pk": {"S": pk}, ":prefix": {"S": prefix}},
            ConsistentRead=True,
        )

    def _get(self, key: Item) -> dict[str, Any] | None:
        response = self._call("get_item", TableName=self._table, Key=key, ConsistentRead=True)
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _batch_get(self, keys: Sequence[Item], *, consistent: bool = True) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), _BATCH_GET_KEYS):
            request: dict[str, Any] = {
                self._table: {
                    "Keys": list(keys[start : start + _BATCH_GET_KEYS]),
                    "ConsistentRead": consistent,
                }
            }
            stalled = 0
            while request:
                response = self._call("batch_get_item", RequestItems=request)
                got = response.get("Responses", {}).get(self._table, [])
                found.extend(got)
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                # Unprocessed keys mean throttling or the 16 MB cap: back off, give up
                # only when several rounds in a row make no progress.
                stalled = 0 if got else stalled + 1
                if stalled >= self._max_attempts:
                    raise RetryableStorageError()
                self._backoff(stalled + 1)
        return found

    def _check_size(self, item: Item) -> int:
        size = _item_size(item)
        if size > resources.MAX_ITEM_BYTES:
            raise PayloadTooLargeError()
        return size

    def _transact(self, actions: Sequence[tuple[str, Item, dict[str, Any]]]) -> None:
        """One TransactWriteItems of (action, item, extra arguments); sizes checked first."""
        if len(actions) > resources.MAX_TRANSACTION_ITEMS:
            raise PayloadTooLargeError("too many records for one transaction")
        total = sum(self._check_size(item) for _, item, _ in actions)
        if total > resources.MAX_TRANSACTION_BYTES:
            raise PayloadTooLargeError()
        transact_items: list[dict[str, Any]] = []
        for action, item, extra in actions:
            if action == "Put":
                body: dict[str, Any] = {"TableName": self._table, "Item": item, **extra}
            else:
                body = {"TableName": self._table, **extra}
            transact_items.append({action: body})
        self._call("transact_write_items", request_token=True, TransactItems=transact_items)

    def _put_new(self, item: Item) -> tuple[str, Item, dict[str, Any]]:
        return ("Put", item, {"ConditionExpression": _NOT_EXISTS})

    # -- item mapping -------------------------------------------------------------------

    def _event_item(self, e: Event) -> Item:
        return {
            **_key(_owner_pk(e.tenant_id, e.owner_id), f"EVENT#{_part(e.id)}"),
            "kind": {"S": "event"},
            "body": _packed(e.model_dump_json()),
        }

    def _node_items(self, n: MemoryNode) -> list[Item]:
        pk = _owner_pk(n.tenant_id, n.owner_id)
        text = n.model_dump_json()
        node: Item = {
            **_key(pk, f"NODE#{_part(n.id)}"),
            "kind": {"S": "node"},
            "body": _packed(text),
            _DIGEST: _body_digest(text),
        }
        if n.expires_at is not None and n.lifecycle_state is not LifecycleState.ARCHIVED:
            node[resources.EXPIRING_PK] = {"S": f"EXPIRING#{_shard(n.id)}"}
            node[resources.EXPIRING_SK] = {"S": f"{_sortable(n.expires_at)}#{n.id}"}
        if self._node_ttl_grace is not None and n.expires_at is not None:
            expiry = int((n.expires_at + self._node_ttl_grace).timestamp())
            node[resources.TTL_ATTRIBUTE] = {"N": str(expiry)}
        links: list[Item] = [
            {
                **_key(pk, f"EVNODE#{_part(event_id)}#{_part(n.id)}"),
                "kind": {"S": "event_node"},
                "event_id": {"S": event_id},
                "node_id": {"S": n.id},
                "created_at": {"S": _sortable(n.created_at)},
            }
            # A repeated evidence ref would put one item twice in a transaction.
            for event_id in dict.fromkeys(n.evidence_refs)
        ]
        assertion = _assertion_link(pk, n)
        return [node, *links, *([assertion] if assertion is not None else [])]

    def _journal_item(self, j: JournalRecord) -> Item:
        pk = _owner_pk(j.tenant_id, j.owner_id)
        if j.operation == RECEIPT_OPERATION:
            pk = _receipt_pk(pk, j.id)
        item: Item = {
            **_key(pk, f"JOURNAL#{_part(j.id)}"),
            "kind": {"S": "journal"},
            "body": _packed(j.model_dump_json()),
        }
        if j.expires_at is not None:
            # DynamoDB deletes it some time after; reads refuse it from expires_at on.
            item[resources.TTL_ATTRIBUTE] = {"N": str(int(j.expires_at.timestamp()))}
        return item

    @staticmethod
    def _history_items(j: JournalRecord) -> list[Item]:
        """One reference per node the record names: `NODEOP#<node>#<position>`, so a node's
        operation history is one Query of its references in time order."""
        pk, position = _owner_pk(j.tenant_id, j.owner_id), history_position(j.created_at, j.id)
        return [
            {
                **_key(pk, _history_sk(node_id, position)),
                "kind": {"S": "node_history"},
                "position": {"S": position},
                "journal_id": {"S": j.id},
            }
            for node_id in history_reference_ids(j)
        ]

    def _transact_with_history(
        self, actions: list[tuple[str, Item, dict[str, Any]]], journal: JournalRecord
    ) -> None:
        """Commit `actions` with the journal record's node references. References beyond the
        100 actions of one transaction (an extraction of many nodes) are put right after it:
        a crash in between loses a history entry, never a record or a change."""
        history = self._history_items(journal)
        room = max(resources.MAX_TRANSACTION_ITEMS - len(actions), 0)
        self._transact([*actions, *(("Put", item, {}) for item in history[:room])])
        for item in history[room:]:
            self._call("put_item", TableName=self._table, Item=item)

    def _idempotency_item(self, i: IdempotencyRecord) -> Item:
        return {
            **_key(_owner_pk(i.tenant_id, i.owner_id), _idempotency_sk(i.key)),
            "kind": {"S": "idempotency"},
            "body": _packed(i.model_dump_json()),
            # DynamoDB may delete the record once expired; until then it still replays.
            resources.TTL_ATTRIBUTE: {"N": str(int(i.expires_at.timestamp()))},
        }

    def _work_item(self, w: WorkItem) -> Item:
        pk = _owner_pk(w.tenant_id, w.owner_id)
        item: Item = {
            **_key(pk, f"WORK#{_part(w.event_id)}#{_part(w.id)}"),
            "kind": {"S": "work"},
            "status": {"S": w.status.value},
            "body": _packed(w.model_dump_json()),
        }
        if w.status is WorkStatus.PENDING:
            order = f"{_sortable(w.created_at)}#{w.id}"
            family = w.kind.family
            item[resources.OWNER_PENDING_PK] = {"S": _owner_pending_pk(pk, family)}
            item[resources.OWNER_PENDING_SK] = {"S": order}
            item[resources.PENDING_PK] = {"S": _pending_pk(family, _shard(w.id))}
            item[resources.PENDING_SK] = {"S": order}
        return item

    # -- Ledger -------------------------------------------------------------------------

    def commit_store(self, commit: StoreCommit) -> None:
        items = [
            self._event_item(commit.event),
            *self._node_items(commit.node),
            self._journal_item(commit.journal),
            self._work_item(commit.work),
            *(self._work_item(w) for w in commit.extra_work),
        ]
        if commit.idempotency is not None:
            items.append(self._idempotency_item(commit.idempotency))
        # Every put is conditional: events are immutable and no record is ever replaced.
        with applied_once(self, commit.journal):
            self._transact_with_history([self._put_new(item) for item in items], commit.journal)

    def _get_one(
        self, owner: OwnerKey, model: type[_ById], kind: str, record_id: str
    ) -> _ById | None:
        item = self._get(_key(_pk_of(owner), f"{kind.upper()}#{_part(record_id)}"))
        return None if item is None else load_record(model, kind, *_stored(item))

    def _get_many(
        self,
        owner: OwnerKey,
        model: type[_ById],
        kind: str,
        record_ids: Sequence[str],
        *,
        consistent: bool = True,
    ) -> dict[str, _ById]:
        pk = _pk_of(owner)
        keys = [_key(pk, f"{kind.upper()}#{_part(rid)}") for rid in dict.fromkeys(record_ids)]
        found = self._batch_get(keys, consistent=consistent)
        records = load_readable(model, kind, map(_stored, found))
        return {record.id: record for record in records}

    def get_event(self, owner: OwnerKey, event_id: str) -> Event | None:
        return self._get_one(owner, Event, "event", event_id)

    def get_events(self, owner: OwnerKey, event_ids: Sequence[str]) -> dict[str, Event]:
        return self._get_many(owner, Event, "event", event_ids)

    def get_idempotency(
        self, owner: OwnerKey, operation: str, key: str
    ) -> IdempotencyRecord | None:
        pk = _pk_of(owner)
        current, legacy = (
            _key(pk, _idempotency_sk(key)),
            _key(pk, _legacy_idempotency_sk(operation, key)),
        )
        # Both layouts in one round trip; `_part` escapes '#', so the two never coincide.
        found = {item[SK]["S"]: item for item in self._batch_get([current, legacy])}
        item = found.get(current[SK]["S"]) or found.get(legacy[SK]["S"])
        return (
            None
            if item is None
            else load_record(IdempotencyRecord, "idempotency", key, _body(item))
        )

    def get_node(self, owner: OwnerKey, node_id: str) -> MemoryNode | None:
        return self._get_one(owner, MemoryNode, "node", node_id)

    def get_nodes(
        self, owner: OwnerKey, node_ids: Sequence[str], *, consistent: bool = True
    ) -> dict[str, MemoryNode]:
        return self._get_many(owner, MemoryNode, "node", node_ids, consistent=consistent)

    def list_assertion_nodes(
        self, owner: OwnerKey, assertion_key: str, limit: int
    ) -> list[MemoryNode]:
        if limit <= 0:
            return []
        prefix = f"ASSERT#{_assertion_part(assertion_key)}#"
        links = self._query_items(
            limit=limit,
            KeyConditionExpression="#pk = :pk AND begins_with(#sk, :prefix)",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={":pk": {"S": _pk_of(owner)}, ":prefix": {"S": prefix}},
            ScanIndexForward=False,  # newest first: the sort key carries the creation time
            ConsistentRead=True,
        )
        nodes = self.get_nodes(owner, [link["node_id"]["S"] for link in links])
        return sorted(nodes.values(), key=lambda n: (n.created_at, n.id), reverse=True)

    def list_event_nodes(self, owner: OwnerKey, event_id: str) -> list[MemoryNode]:
        links = self._query_prefix(_pk_of(owner), f"EVNODE#{_part(event_id)}#")
        nodes = self.get_nodes(owner, [link["node_id"]["S"] for link in links])
        return sorted(nodes.values(), key=lambda n: (n.created_at, n.id))

    def list_event_work(self, owner: OwnerKey, event_id: str) -> list[WorkItem]:
        items = self._query_prefix(_pk_of(owner), f"WORK#{_part(event_id)}#")
        work = load_readable(WorkItem, "work", map(_stored, items))
        return sorted(work, key=lambda w: (w.created_at, w.id))

    def _pending_query(self, index: str, pk_name: str, pk_value: str) -> dict[str, Any]:
        return {
            "IndexName": index,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": pk_name},
            "ExpressionAttributeValues": {":pk": {"S": pk_value}},
        }

    def _pending_queries(self, owner: OwnerKey | None, family: WorkFamily) -> list[dict[str, Any]]:
        if owner is not None:
            return [
                self._pending_query(
                    resources.OWNER_PENDING_INDEX,
                    resources.OWNER_PENDING_PK,
                    _owner_pending_pk(_pk_of(owner), family),
                )
            ]
        return [
            self._pending_query(
                resources.PENDING_INDEX, resources.PENDING_PK, _pending_pk(family, shard)
            )
            for shard in range(resources.PENDING_SHARDS)
        ]

    def list_pending_work(
        self, owner: OwnerKey | None, limit: int, *, family: WorkFamily = "materialize"
    ) -> list[WorkItem]:
        if limit <= 0:
            return []
        sort_name = resources.PENDING_SK if owner is None else resources.OWNER_PENDING_SK

        def oldest() -> list[dict[str, Any]]:
            # Each shard is read oldest first up to `limit`; merging the sorted runs gives
            # the oldest `limit` overall.
            runs = [
                self._query_items(limit=limit, **query)
                for query in self._pending_queries(owner, family)
            ]
            return list(heapq.merge(*runs, key=lambda item: str(item[sort_name]["S"])))

        work = self._load_leaving_index(
            oldest, WorkItem, "work", _PENDING_ATTRIBUTES, status=QUARANTINED_WORK_STATUS
        )
        # The index copy and its body come from the same item version; this only drops an
        # entry that a racing writer left behind.
        return [w for w in work if w.status is WorkStatus.PENDING][:limit]

    def _load_leaving_index(
        self,
        read: Callable[[], list[dict[str, Any]]],
        model: type[RecordT],
        kind: str,
        index_attributes: Sequence[str],
        *,
        status: str | None = None,
    ) -> list[RecordT]:
        """The records `read` (a query of a sparse index) finds that load. An unreadable one
        leaves that index (its `index_attributes` removed, its `status` set), so that it
        cannot hold up the records behind it; each round then refills the batch. Bounded,
        as an index may still show a removed item for a moment."""
        loaded: list[RecordT] = []
        for _ in range(_QUARANTINE_ROUNDS):
            items = read()
            loaded, unreadable = split_readable(model, kind, map(_stored, items))
            if not unreadable:
                break
            bad = set(unreadable)
            for item in items:
                if _stored(item)[0] in bad:
                    self._leave_index(item, index_attributes, status)
        return loaded

    def _leave_index(
        self, item: dict[str, Any], index_attributes: Sequence[str], status: str | None
    ) -> None:
        names = {f"#r{i}": name for i, name in enumerate(index_attributes)}
        update: dict[str, Any] = {
            "Key": _key(item[PK]["S"], item[SK]["S"]),
            "UpdateExpression": "REMOVE " + ", ".join(names),
            "ConditionExpression": "attribute_exists(#pk)",
            "ExpressionAttributeNames": {**names, "#pk": PK},
        }
        if status is not None:
            update["UpdateExpression"] = "SET #status = :status " + update["UpdateExpression"]
            update["ExpressionAttributeNames"]["#status"] = "status"
            update["ExpressionAttributeValues"] = {":status": {"S": status}}
        try:
            self._call("update_item", TableName=self._table, **update)
        except ConflictError:
            return  # deleted meanwhile: nothing left to take out

    def count_pending_work(
        self, owner: OwnerKey | None, *, family: WorkFamily = "materialize"
    ) -> int:
        return sum(
            int(page.get("Count", 0))
            for query in self._pending_queries(owner, family)
            for page in self._pages("query", Select="COUNT", **query)
        )

    def _work_update(self, item: WorkItem) -> tuple[Item, dict[str, Any]]:
        """The stored form of a work item and the UpdateItem arguments that replace it."""
        stored = self._work_item(item)
        values = {k: v for k, v in stored.items() if k not in (PK, SK)}
        names = {f"#a{i}": name for i, name in enumerate(values)}
        update = "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(values)))
        attribute_values = {f":a{i}": value for i, value in enumerate(values.values())}
        removed = [name for name in _PENDING_ATTRIBUTES if name not in values]
        if removed:
            # Leaving PENDING takes the item out of both sparse indexes.
            names.update({f"#r{i}": name for i, name in enumerate(removed)})
            update += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(removed)))
        names["#pk"] = PK
        return stored, {
            "Key": {PK: stored[PK], SK: stored[SK]},
            "UpdateExpression": update,
            "ConditionExpression": "attribute_exists(#pk)",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": attribute_values,
        }

    def save_work(self, item: WorkItem) -> None:
        stored, update = self._work_update(item)
        self._check_size(stored)
        try:
            self._call("update_item", TableName=self._table, **update)
        except ConflictError:
            # Unknown work item: like the embedded ledger's UPDATE, nothing is written
            # (an unconditional update would create a work item nobody committed).
            return

    def commit_ingest(self, commit: IngestCommit) -> None:
        items = [self._event_item(e) for e in commit.events]
        items += [self._work_item(w) for w in commit.work]
        items.append(self._journal_item(commit.journal))
        if commit.idempotency is not None:
            items.append(self._idempotency_item(commit.idempotency))
        with applied_once(self, commit.journal):
            self._transact_with_history([self._put_new(item) for item in items], commit.journal)

    def commit_node_change(self, change: NodeChange) -> None:
        actions: list[tuple[str, Item, dict[str, Any]]] = []
        for previous, new in change.updates:
            (stored, *links) = self._node_items(new)
            # The evidence links follow the refs: a source finds every node it backs.
            actions += [
                ("Put", link, {})
                for link in links
                if "event_id" in link and link["event_id"]["S"] not in previous.evidence_refs
            ]
            # A node given an assertion key (a note that took a claim) becomes findable by it.
            actions += [
                ("Put", link, {})
                for link in links
                if "assertion_key" in link
                and stored_assertion_key(previous.metadata) != link["assertion_key"]["S"]
            ]
            actions += [
                _delete(_key(stored[PK]["S"], f"EVNODE#{_part(ref)}#{_part(new.id)}"))
                for ref in dict.fromkeys(previous.evidence_refs)
                if ref not in new.evidence_refs
            ]
            # Replace only the exact state that was read: a concurrent change is a conflict.
            actions.append(
                (
                    "Put",
                    stored,
                    self._unchanged_node(previous),
                )
            )
        for node in change.new_nodes:
            actions += [self._put_new(item) for item in self._node_items(node)]
        for item in change.work_updates:
            stored, update = self._work_update(item)
            actions.append(("Update", stored, update))
        actions += [self._put_new(self._edge_item(e)) for e in change.edges]
        actions.append(self._put_new(self._journal_item(change.journal)))
        actions += [self._put_new(self._work_item(w)) for w in change.work]
        if change.idempotency is not None:
            actions.append(self._put_new(self._idempotency_item(change.idempotency)))
        with applied_once(self, change.journal):
            self._transact_with_history(actions, change.journal)

    @staticmethod
    def _unchanged_node(previous: MemoryNode) -> dict[str, Any]:
        """The condition of replacing a node only in the exact state that was read. Nodes
        written before bodies were compressed carry no digest and still hold their text."""
        text = previous.model_dump_json()
        return {
            "ConditionExpression": (
                "#digest = :digest OR (attribute_not_exists(#digest) AND #body = :text)"
            ),
            "ExpressionAttributeNames": {"#digest": _DIGEST, "#body": "body"},
            "ExpressionAttributeValues": {":digest": _body_digest(text), ":text": {"S": text}},
        }

    @staticmethod
    def _edge_item(e: MemoryEdge) -> Item:
        return {
            **_key(_owner_pk(e.tenant_id, e.owner_id), f"EDGE#{_part(e.id)}"),
            "kind": {"S": "edge"},
            "body": _packed(e.model_dump_json()),
        }

    def list_expired_nodes(self, at: datetime, limit: int) -> list[MemoryNode]:
        if limit <= 0:
            return []
        bound = f"{_sortable(at)}#~"  # '~' sorts after every id: includes expiry == at

        def earliest() -> list[dict[str, Any]]:
            runs = [
                self._query_items(
                    limit=limit,
                    IndexName=resources.EXPIRING_INDEX,
                    KeyConditionExpression="#pk = :pk AND #sk <= :bound",
                    ExpressionAttributeNames={
                        "#pk": resources.EXPIRING_PK,
                        "#sk": resources.EXPIRING_SK,
                    },
                    ExpressionAttributeValues={
                        ":pk": {"S": f"EXPIRING#{shard}"},
                        ":bound": {"S": bound},
                    },
                )
                for shard in range(resources.PENDING_SHARDS)
            ]
            return list(heapq.merge(*runs, key=lambda item: str(item[resources.EXPIRING_SK]["S"])))

        nodes = self._load_leaving_index(
            earliest, MemoryNode, "node", (resources.EXPIRING_PK, resources.EXPIRING_SK)
        )
        return [n for n in nodes if n.lifecycle_state is not LifecycleState.ARCHIVED][:limit]

    def delete_expired_receipts(
        self,
        at: datetime,  # noqa: ARG002
        *,
        saved_before: datetime,  # noqa: ARG002
        limit: int,  # noqa: ARG002
    ) -> int:
        # DynamoDB's TTL deletes expired receipts (their `expires_at_epoch`) at no write cost;
        # a sweep here would pay a delete per receipt.
        return 0

    def archive_node(self, node: MemoryNode, journal: JournalRecord, work: WorkItem) -> None:
        (stored, *_links) = self._node_items(node)
        # Only an unarchived node still carries the expiry index attribute: the guard
        # against two passes archiving (and journaling) the same node.
        replace = (
            "Put",
            stored,
            {
                "ConditionExpression": "attribute_exists(#ex)",
                "ExpressionAttributeNames": {"#ex": resources.EXPIRING_PK},
            },
        )
        self._transact_with_history(
            [
                replace,
                self._put_new(self._journal_item(journal)),
                self._put_new(self._work_item(work)),
            ],
            journal,
        )

    def commit_materialization(self, node: MemoryNode, work: WorkItem) -> None:
        stored, update = self._work_update(work)
        actions = [self._put_new(item) for item in self._node_items(node)]
        actions.append(("Update", stored, update))
        self._transact(actions)

    def append_journal(self, record: JournalRecord) -> None:
        item = self._journal_item(record)
        if self._history_items(record):
            self._transact_with_history([self._put_new(item)], record)
            return
        self._check_size(item)
        log = self._receipt_log_item(record) if record.operation == RECEIPT_OPERATION else None
        self._call("put_item", TableName=self._table, Item=item, ConditionExpression=_NOT_EXISTS)
        if log is not None:
            # Put after the receipt, outside a transaction (which would bill both items twice):
            # a failure here leaves a receipt readable by id but not listed, and the caller is
            # told it was not saved (receipt_persisted false), never the reverse.
            self._call("put_item", TableName=self._table, Item=log)

    @staticmethod
    def _receipt_log_item(record: JournalRecord) -> Item | None:
        """A receipt's entry in its owner's listing, newest last by sort key: its summary (the
        query and a few counts), so a page of the listing reads no receipt body. None for a
        record whose payload is no receipt: every listing would skip it anyway."""
        try:
            summary = summarize_receipt(record)
        except CorruptRecordError:
            return None
        item: Item = {
            **_key(
                _receipt_log_pk(_owner_pk(record.tenant_id, record.owner_id)),
                _receipt_log_sk(summary.position),
            ),
            "kind": {"S": "receipt_log"},
            "position": {"S": summary.position},
            "body": {"S": summary.model_dump_json()},
        }
        if record.expires_at is not None:
            item[resources.TTL_ATTRIBUTE] = {"N": str(int(record.expires_at.timestamp()))}
        return item

    def list_receipt_summaries(
        self,
        owner: OwnerKey,
        *,
        before: str | None,
        since: datetime | None,
        until: datetime | None,
        limit: int,
    ) -> ReceiptSummaryPage:
        if limit <= 0:
            return ReceiptSummaryPage((), None)
        low = _RECEIPT_LOG_PREFIX + (f"{_sortable(since)}|" if since is not None else "")
        high = _RECEIPT_LOG_PREFIX + _HIGHEST_CHARACTER
        if until is not None:
            high = min(high, f"{_RECEIPT_LOG_PREFIX}{_sortable(until)}|")
        cursor = _receipt_log_sk(before) if before is not None else None
        if cursor is not None:
            high = min(high, cursor)
        if high < low:
            return ReceiptSummaryPage((), None)
        # Newest first; BETWEEN is inclusive, so the cursor itself may come back and is dropped.
        items = self._query_items(
            limit=limit + 2,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :low AND :high",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={
                ":pk": {"S": _receipt_log_pk(_pk_of(owner))},
                ":low": {"S": low},
                ":high": {"S": high},
            },
            ScanIndexForward=False,
            ConsistentRead=True,
        )
        after_cursor = [i for i in items if cursor is None or i[SK]["S"] < cursor]
        read = after_cursor[:limit]
        summaries: list[RetrievalSummary] = []
        for item in read:
            position = str(item.get("position", {}).get("S", ""))
            body = _unpacked(item.get("body", {"S": ""}))
            try:
                summaries.append(load_record(RetrievalSummary, "receipt_log", position, body))
            except CorruptRecordError as exc:
                log_quarantined(exc)
        more = len(after_cursor) > limit
        last = str(read[-1].get("position", {}).get("S", "")) if more else None
        return ReceiptSummaryPage(tuple(summaries), last)

    def get_receipt_records(
        self, owner: OwnerKey, request_ids: Sequence[str]
    ) -> dict[str, JournalRecord]:
        pk = _pk_of(owner)
        keys = [_key(_receipt_pk(pk, i), f"JOURNAL#{_part(i)}") for i in dict.fromkeys(request_ids)]
        records = load_readable(JournalRecord, "journal", map(_stored, self._batch_get(keys)))
        return {j.id: j for j in records if j.operation == RECEIPT_OPERATION}

    def list_node_history(
        self, owner: OwnerKey, node_id: str, *, after: str | None, limit: int
    ) -> NodeHistoryPage:
        prefix = _history_sk(node_id, "")
        cursor = _history_sk(node_id, after) if after is not None else None
        # BETWEEN is inclusive: the cursor itself may come back and is dropped; one reference
        # more than asked says whether more follow.
        refs = self._query_items(
            limit=limit + 2,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :low AND :high",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={
                ":pk": {"S": _pk_of(owner)},
                ":low": {"S": cursor or prefix},
                ":high": {"S": prefix + _HIGHEST_CHARACTER},
            },
            ConsistentRead=True,
        )
        after_cursor = [ref for ref in refs if cursor is None or ref[SK]["S"] > cursor]
        page = after_cursor[:limit]
        ids = [str(ref.get("journal_id", {}).get("S", "")) for ref in page]
        keys = [_key(_pk_of(owner), f"JOURNAL#{_part(i)}") for i in dict.fromkeys(ids) if i]
        bodies = {_stored(item)[0]: _stored(item)[1] for item in self._batch_get(keys)}
        # A reference whose record is gone is read past, as the embedded ledger does.
        records = load_journal_page(owner, [(i, bodies[i]) for i in ids if i in bodies])
        more = len(after_cursor) > limit
        last = str(page[-1].get("position", {}).get("S", "")) if more else None
        return NodeHistoryPage(tuple(records), last)

    def get_journal(
        self, owner: OwnerKey, record_id: str, *, receipt: bool = False
    ) -> JournalRecord | None:
        pk, sk = _pk_of(owner), f"JOURNAL#{_part(record_id)}"
        # Receipts sit on their shard (those saved before receipts were spread, in the owner's
        # partition, with every other record): the likely place first, so a found record is
        # one GetItem; only a miss looks in both.
        places = [_receipt_pk(pk, record_id), pk]
        for place in places if receipt else reversed(places):
            item = self._get(_key(place, sk))
            if item is not None:
                return load_record(JournalRecord, "journal", *_stored(item))
        return None

    def list_journal(
        self, owner: OwnerKey, id_prefix: str, *, after_id: str | None = None, limit: int = 100
    ) -> list[JournalRecord]:
        if limit <= 0:
            return []
        prefix = f"JOURNAL#{_part(id_prefix)}"
        # BETWEEN is inclusive: start at the cursor itself and drop it below.
        low = max(prefix, f"JOURNAL#{_part(after_id)}") if after_id is not None else prefix
        items = self._query_items(
            limit=limit + 1,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :low AND :high",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={
                ":pk": {"S": _pk_of(owner)},
                ":low": {"S": low},
                ":high": {"S": prefix + _HIGHEST_CHARACTER},
            },
            ConsistentRead=True,
        )
        # Filtered and ordered by key, as the embedded ledger does: a body is never trusted
        # for its own position, so a record swapped under another key stays visible to the
        # engine's order check instead of being dropped here. An unreadable body keeps its
        # place as a stand-in that never verifies (load_journal_page).
        cursor = f"JOURNAL#{_part(after_id)}" if after_id is not None else None
        in_page = [
            item
            for item in items
            if item[SK]["S"].startswith(prefix) and (cursor is None or item[SK]["S"] > cursor)
        ][:limit]
        return load_journal_page(owner, map(_stored, in_page))

    def list_journal_of_subject(
        self,
        owner: OwnerKey,
        id_prefix: str,
        subject_id: str,
        *,
        after_id: str | None,
        limit: int,
        scan_limit: int,
    ) -> tuple[list[JournalRecord], str | None]:
        # The subject is inside the packed body, and no index holds it: read the prefix's
        # records in key order, at most scan_limit of them, and keep the subject's. The
        # cursor is the last record read, so the next call goes on where this one stopped.
        found: list[JournalRecord] = []
        cursor, read = after_id, 0
        while read < scan_limit:
            chunk = min(_SUBJECT_SCAN_CHUNK, scan_limit - read)
            records = self.list_journal(owner, id_prefix, after_id=cursor, limit=chunk)
            for record in records:
                read += 1
                cursor = record.id
                if record.subject_id == subject_id:
                    found.append(record)
                    if len(found) == limit:
                        return found, cursor
            if len(records) < chunk:
                return found, None
        return found, cursor

    def list_nodes(self, owner: OwnerKey, *, node_type: NodeType | None = None) -> list[MemoryNode]:
        items = self._query_prefix(_pk_of(owner), "NODE#")
        nodes = load_readable(MemoryNode, "node", map(_stored, items))
        return [n for n in nodes if node_type is None or n.node_type is node_type]

    def list_owners(self, tenant_id: str) -> list[str]:
        # Owners are partition keys, and no index lists partitions: a filtered Scan of
        # event items, fine for a rare operator command (reindexing a tenant) and never
        # run by the functions.
        prefix = f"T#{_part(tenant_id)}#O#"
        owners: set[str] = set()
        for page in self._pages(
            "scan",
            FilterExpression="begins_with(#pk, :tenant) AND begins_with(#sk, :event)",
            ProjectionExpression="#pk",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={":tenant": {"S": prefix}, ":event": {"S": "EVENT#"}},
            ConsistentRead=True,
        ):
            owners.update(_unpart(item[PK]["S"][len(prefix) :]) for item in page.get("Items", []))
        return sorted(owners)

    def list_node_edges(self, owner: OwnerKey, node_id: str) -> list[MemoryEdge]:
        # Edges live in the owner's partition; their number per owner is small next to nodes.
        edges = load_readable(
            MemoryEdge, "edge", map(_stored, self._query_prefix(_pk_of(owner), "EDGE#"))
        )
        return sorted(
            (e for e in edges if node_id in (e.source_node_id, e.target_node_id)),
            key=lambda e: (e.created_at, e.id),
        )

    def list_edges_touching(self, owner: OwnerKey, node_ids: Sequence[str]) -> list[MemoryEdge]:
        # One Query of the owner's edge items for the whole set, as list_node_edges does for one.
        wanted = set(node_ids)
        edges = load_readable(
            MemoryEdge, "edge", map(_stored, self._query_prefix(_pk_of(owner), "EDGE#"))
        )
        return sorted(
            (e for e in edges if wanted & {e.source_node_id, e.target_node_id}),
            key=lambda e: (e.created_at, e.id),
        )

    def list_nodes_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        items, next_after = self._id_page(owner, "NODE#", after_id, limit)
        return load_readable(MemoryNode, "node", map(_stored, items)), next_after

    def list_events_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[Event], str | None]:
        items, next_after = self._id_page(owner, "EVENT#", after_id, limit)
        return load_readable(Event, "event", map(_stored, items)), next_after

    def list_edges_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[MemoryEdge], str | None]:
        items, next_after = self._id_page(owner, "EDGE#", after_id, limit)
        return load_readable(MemoryEdge, "edge", map(_stored, items)), next_after

    def _id_page(
        self, owner: OwnerKey, prefix: str, after_id: str | None, limit: int
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One Query of the owner's partition, in sort key (so id) order after the cursor."""
        cursor = f"{prefix}{_part(after_id)}" if after_id is not None else None
        # BETWEEN is inclusive: the cursor itself may come back and is dropped; one item more
        # than asked says whether more follow.
        items = self._query_items(
            limit=limit + 2,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :low AND :high",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={
                ":pk": {"S": _pk_of(owner)},
                ":low": {"S": cursor or prefix},
                ":high": {"S": prefix + _HIGHEST_CHARACTER},
            },
            ConsistentRead=True,
        )
        after = [item for item in items if cursor is None or item[SK]["S"] > cursor]
        page = after[:limit]
        more = len(after) > limit
        return page, _unpart(page[-1][SK]["S"][len(prefix) :]) if more else None

    def delete_event(self, deletion: EventDeletion) -> None:
        pk = _pk_of(deletion.owner)
        event_link = f"EVNODE#{_part(deletion.event_id)}#"
        # Units never split across transactions. A retry finds what is left through the event
        # (its work, its evidence links) and through the nodes those links reach (their edges,
        # their other links), so what leads to other items leaves with or after them: edges
        # and work first (and the journal records naming the nodes), then each node's links to
        # other events, then each node together with its link to this event, the event last.
        units: list[list[Item]] = [
            [_key(pk, f"JOURNAL#{_part(record_id)}")] for record_id in deletion.removed_journal_ids
        ]
        # The node references go before the records and nodes they lead to (a retry finds
        # the nodes' through the nodes, the records' through the records).
        units = [[key] for key in self._history_keys_of(deletion)] + units
        units += [[_key(pk, f"EDGE#{_part(edge.id)}")] for edge in deletion.edges]
        units += [[_key(pk, f"WORK#{_part(w.event_id)}#{_part(w.id)}")] for w in deletion.work]
        units += [
            [_key(pk, f"EVNODE#{_part(ref)}#{_part(node.id)}")]
            for node in deletion.nodes
            for ref in dict.fromkeys(node.evidence_refs)
            if ref != deletion.event_id
        ]
        units += [
            [
                _key(pk, f"NODE#{_part(node.id)}"),
                _key(pk, f"{event_link}{_part(node.id)}"),
                *(
                    [_key(pk, link[SK]["S"])]
                    if (link := _assertion_link(pk, node)) is not None
                    else []
                ),
            ]
            for node in deletion.nodes
        ]
        # The event, the journal record and its node references.
        room = resources.MAX_TRANSACTION_ITEMS - 2 - len(self._history_items(deletion.journal))
        chunks: list[list[Item]] = [[]]
        for unit in units:
            if len(chunks[-1]) + len(unit) > room:
                chunks.append([])
            chunks[-1].extend(unit)
        *earlier, last = chunks
        for chunk in earlier:
            self._transact([_delete(key) for key in chunk])
        event_key = _key(pk, f"EVENT#{_part(deletion.event_id)}")
        final = [
            *(_delete(key) for key in last),
            ("Delete", event_key, {"Key": event_key, "ConditionExpression": _EXISTS}),
            self._put_new(self._journal_item(deletion.journal)),
        ]
        try:
            self._transact_with_history(final, deletion.journal)
        except ConflictError:
            if self._get(event_key) is None:
                raise NotFoundError("Event not found") from None
            raise

    def _history_keys_of(self, deletion: EventDeletion) -> list[Item]:
        """The node references a deletion removes: every one of its deleted nodes, and those of
        the journal records it removes (read to learn which nodes they name)."""
        pk = _pk_of(deletion.owner)
        keys = [
            _key(pk, str(item[SK]["S"]))
            for node in deletion.nodes
            for item in self._query_prefix(pk, _history_sk(node.id, ""))
        ]
        gone = {node.id for node in deletion.nodes}
        for record_id in deletion.removed_journal_ids:
            item = self._get(_key(pk, f"JOURNAL#{_part(record_id)}"))
            if item is None:
                continue
            try:
                record = load_record(JournalRecord, "journal", *_stored(item))
            except CorruptRecordError:
                continue  # names no node it can be found under
            position = history_position(record.created_at, record.id)
            keys += [
                _key(pk, _history_sk(node_id, position))
                for node_id in history_reference_ids(record)
                if node_id not in gone
            ]
        return keys

    def count_events(self, owner: OwnerKey) -> int:
        return sum(
            int(page.get("Count", 0))
            for page in self._pages(
                "query",
                Select="COUNT",
                KeyConditionExpression="#pk = :pk AND begins_with(#sk, :prefix)",
                ExpressionAttributeNames={"#pk": PK, "#sk": SK},
                ExpressionAttributeValues={":pk": {"S": _pk_of(owner)}, ":prefix": {"S": "EVENT#"}},
            )
        )

    def count_nodes(self, owner: OwnerKey) -> dict[tuple[LifecycleState, NodeType], int]:
        # No counters are kept: one Query of the owner's node items, bodies parsed here.
        nodes = load_readable(
            MemoryNode, "node", map(_stored, self._query_prefix(_pk_of(owner), "NODE#"))
        )
        return dict(Counter((n.lifecycle_state, n.node_type) for n in nodes))

    # -- erasure ------------------------------------------------------------------------

    @staticmethod
    def _erasure_key(tenant_id: str, erasure_id: str) -> Item:
        return _key(f"T#{_part(tenant_id)}#ERASURES", f"ERASURE#{_part(erasure_id)}")

    def _erasure_item(self, erasure: OwnerErasure, tenant_id: str) -> Item:
        return {
            **self._erasure_key(tenant_id, erasure.erasure_id),
            "kind": {"S": "erasure"},
            "body": {"S": erasure.model_dump_json()},
        }

    def erase_owner_keys(self, owner: OwnerKey) -> int:
        removed = 0
        for item in self._query_prefix(f"TENANT#{_part(owner.tenant_id)}#KEYS", "KEY#"):
            try:
                body = json.loads(_body(item))
                key_id, key_hash = str(body["key_id"]), str(body["key_hash"])
            except (ValueError, KeyError, TypeError):
                continue  # an unreadable key authenticates nobody; `prme keys` reports it
            if body.get("owner_id") != owner.owner_id:
                continue
            listing = self._tenant_key(owner.tenant_id, key_id)
            # The three items of a key go together; a retry after a partial failure finds
            # the listing item still there. Counted once: when a concurrent erase call removed
            # the key first, the condition fails and this call does not count it.
            try:
                self._transact(
                    [
                        _delete(self._hash_key(key_hash)),
                        _delete(self._id_key(key_id)),
                        ("Delete", listing, {"Key": listing, "ConditionExpression": _EXISTS}),
                    ]
                )
            except ConflictError:
                continue
            removed += 1
        return removed

    def erase_owner_step(self, owner: OwnerKey, erasure: OwnerErasure, limit: int) -> OwnerErasure:
        room = max(1, min(limit, _ERASE_TRANSACTION_RECORDS))
        items: list[dict[str, Any]] = []
        # The owner's partition, then its receipt shards: a step that finds nothing in any of
        # them is the last one.
        for pk in _owner_partitions(_pk_of(owner)):
            if len(items) >= room:
                break
            items += self._query_items(
                limit=room - len(items),
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": PK},
                ExpressionAttributeValues={":pk": {"S": pk}},
                ConsistentRead=True,
            )
        removed = Counter(field for field in map(_erased_field, items) if field)
        saved = erasure.model_copy(update={"removed": erasure.removed.plus(removed)})
        keys = [_key(item[PK]["S"], item[SK]["S"]) for item in items]
        deletes = [
            # Counted once: an item a concurrent erase call removed first fails the step.
            ("Delete", key, {"Key": key, "ConditionExpression": _EXISTS})
            for key in keys
        ]
        self._transact([*deletes, self._replace_erasure(saved, owner.tenant_id, replacing=erasure)])
        return saved

    def _replace_erasure(
        self, erasure: OwnerErasure, tenant_id: str, *, replacing: OwnerErasure | None
    ) -> tuple[str, Item, dict[str, Any]]:
        """A Put of the erasure record, on condition that the stored one is `replacing`."""
        item = self._erasure_item(erasure, tenant_id)
        if replacing is None:
            return self._put_new(item)
        condition = {
            "ConditionExpression": "#body = :old",
            "ExpressionAttributeNames": {"#body": "body"},
            "ExpressionAttributeValues": {":old": {"S": replacing.model_dump_json()}},
        }
        return ("Put", item, condition)

    def get_erasure(self, tenant_id: str, erasure_id: str) -> OwnerErasure | None:
        item = self._get(self._erasure_key(tenant_id, erasure_id))
        if item is None:
            return None
        return load_record(OwnerErasure, "erasure", erasure_id, _body(item))

    def save_erasure(
        self, erasure: OwnerErasure, tenant_id: str, *, replacing: OwnerErasure | None
    ) -> None:
        _, item, condition = self._replace_erasure(erasure, tenant_id, replacing=replacing)
        self._call("put_item", TableName=self._table, Item=item, **condition)

    # -- CredentialStore ----------------------------------------------------------------

    @staticmethod
    def _hash_key(key_hash: str) -> Item:
        return _key(f"KEYHASH#{_part(key_hash)}", "KEY")

    @staticmethod
    def _tenant_key(tenant_id: str, key_id: str) -> Item:
        return _key(f"TENANT#{_part(tenant_id)}#KEYS", f"KEY#{_part(key_id)}")

    @staticmethod
    def _id_key(key_id: str) -> Item:
        return _key(f"KEYID#{_part(key_id)}", "KEY")

    def put_credential(self, credential: Credential) -> None:
        body = {"S": credential.model_dump_json()}
        by_hash: Item = {
            **self._hash_key(credential.key_hash),
            "kind": {"S": "credential"},
            "body": body,
        }
        by_tenant: Item = {
            **self._tenant_key(credential.tenant_id, credential.key_id),
            "kind": {"S": "credential_ref"},
            "body": body,
        }
        by_id: Item = {
            **self._id_key(credential.key_id),
            "kind": {"S": "credential_id"},
            "key_hash": {"S": credential.key_hash},
            "tenant_id": {"S": credential.tenant_id},
        }
        try:
            self._transact([self._put_new(i) for i in (by_hash, by_tenant, by_id)])
        except ConflictError as exc:
            raise ConflictError("API key already exists") from exc

    def find_credential(self, key_hash: str) -> Credential | None:
        item = self._get(self._hash_key(key_hash))
        if item is None:
            return None
        # The item by hash does not name its key id, and the hash itself is not for logs.
        return load_record(Credential, "credential", "(by hash)", _body(item))

    def list_credentials(self, tenant_id: str | None) -> list[Credential]:
        if tenant_id is None:
            # Operator listing across tenants: rare, so a filtered Scan beats another GSI.
            items = [
                item
                for page in self._pages(
                    "scan",
                    FilterExpression="#kind = :kind",
                    ExpressionAttributeNames={"#kind": "kind"},
                    ExpressionAttributeValues={":kind": {"S": "credential_ref"}},
                    ConsistentRead=True,
                )
                for item in page.get("Items", [])
            ]
        else:
            items = self._query_prefix(f"TENANT#{_part(tenant_id)}#KEYS", "KEY#")
        # One damaged key item must not stop `prme keys`, startup or every other key.
        credentials = load_readable(Credential, "credential", map(_stored, items))
        return sorted(credentials, key=lambda c: (c.created_at, c.key_id))

    def count_credentials(self) -> int:
        return sum(
            int(page.get("Count", 0))
            for page in self._pages(
                "scan",
                FilterExpression="#kind = :kind",
                ExpressionAttributeNames={"#kind": "kind"},
                ExpressionAttributeValues={":kind": {"S": "credential_ref"}},
                Select="COUNT",
                ConsistentRead=True,
            )
        )

    def revoke_credential(self, key_id: str, at: datetime) -> Credential | None:
        ref = self._get(self._id_key(key_id))
        if ref is None:
            return None
        hash_key = self._hash_key(ref["key_hash"]["S"])
        tenant_key = self._tenant_key(ref["tenant_id"]["S"], key_id)
        for _ in range(self._max_attempts):
            item = self._get(hash_key)
            if item is None:
                # The three items are written in one transaction; one missing is corruption.
                raise StorageUnavailableError("credential records are inconsistent")
            current = load_record(Credential, "credential", key_id, _body(item))
            if current.revoked_at is not None:
                return current
            revoked = current.model_copy(update={"revoked_at": at})
            new_body = {"S": revoked.model_dump_json()}
            stored_hash = {**hash_key, "kind": item["kind"], "body": new_body}
            stored_ref = {**tenant_key, "kind": {"S": "credential_ref"}, "body": new_body}
            update = {
                "UpdateExpression": "SET #body = :new",
                "ExpressionAttributeNames": {"#body": "body"},
            }
            try:
                self._transact(
                    [
                        (
                            "Update",
                            stored_hash,
                            {
                                **update,
                                "Key": hash_key,
                                # Optimistic: a concurrent revoke wins and its time is kept.
                                "ConditionExpression": "#body = :old",
                                "ExpressionAttributeValues": {
                                    ":new": new_body,
                                    ":old": item["body"],
                                },
                            },
                        ),
                        (
                            "Update",
                            stored_ref,
                            {
                                **update,
                                "Key": tenant_key,
                                "ConditionExpression": _EXISTS,
                                "ExpressionAttributeValues": {":new": new_body},
                            },
                        ),
                    ]
                )
            except ConflictError:
                continue
            return revoked
        raise RetryableStorageError()
