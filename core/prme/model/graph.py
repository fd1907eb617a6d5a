"""Graph and provenance reads of one node: its evidence and operation history, the nodes its
edges reach, and its supersedence chain; plus which journal records name a node."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from prme.model.records import Event, JournalRecord, MemoryNode

# The operation of saved retrieval receipts (prme.retrieval.receipts.RECEIPT_OPERATION, kept
# equal by a unit test): a receipt reads nodes, it does not operate on them.
RECEIPT_OPERATION_NAME = "retrieval_receipt"

# Payload keys whose value names one node the record operated on.
NODE_ID_KEYS = (
    "node_id",
    "old_node_id",
    "new_node_id",
    "node_a_id",
    "node_b_id",
    "winner_id",
    "loser_id",
)
# Payload keys whose value is a list of such nodes.
NODE_ID_LIST_KEYS = ("node_ids",)

DEFAULT_OPERATION_LIMIT = 100
MAX_OPERATION_LIMIT = 1000
DEFAULT_MAX_HOPS = 2
MAX_HOPS = 3
# Most nodes a neighborhood returns (the start node not counted).
MAX_NEIGHBORHOOD_NODES = 200
# Most nodes a supersedence chain returns (the start node counted).
MAX_CHAIN_NODES = 1000
SUPERSEDES_EDGE = "supersedes"

ChainDirection = Literal["forward", "backward", "both"]

# A history position: the record's UTC time, fixed width so text order is time order, then
# its id (two records of one instant keep one order).
HISTORY_POSITION_PATTERN = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\|[^|]{1,256}$"
_POSITION = re.compile(HISTORY_POSITION_PATTERN)


def history_position(created_at: datetime, record_id: str) -> str:
    """Where a journal record sits in a node's operation history (also the page cursor)."""
    moment = created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{moment}|{record_id}"


def is_history_position(text: str) -> bool:
    return _POSITION.fullmatch(text) is not None


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


DIRECT_STORE_OPERATION_NAME = "direct_store"
_DIRECT_STORE_RECORD = uuid.UUID("5f0f8a53-4b6e-4c53-9d0e-6d2c3e1a7b21")


def direct_store_record_id(event_id: str) -> str:
    """The id of the journal record that saved a direct store's node, derived from its event.

    Derived, so a node's creation record is read by key from its evidence instead of through
    a history reference: on DynamoDB that reference would add a second billed item to every
    store's transaction. Records saved before ids were derived keep their references."""
    return str(uuid.uuid5(_DIRECT_STORE_RECORD, event_id))


def referenced_node_ids(record: JournalRecord) -> tuple[str, ...]:
    """The ids a journal record is listed under in the per-node history: its subject (when it
    is an id of something other than the record itself) and every node its payload names
    under the keys above or as the direct store's node snapshot. Receipts name none."""
    if record.operation == RECEIPT_OPERATION_NAME:
        return ()
    payload: Mapping[str, Any] = record.payload
    named: list[str] = []
    if record.subject_id != record.id and _is_uuid(record.subject_id):
        named.append(record.subject_id)
    named += [payload[key] for key in NODE_ID_KEYS if isinstance(payload.get(key), str)]
    for key in NODE_ID_LIST_KEYS:
        values = payload.get(key)
        if isinstance(values, list):
            named += [value for value in values if isinstance(value, str)]
    snapshot = payload.get("node")
    if isinstance(snapshot, dict) and isinstance(snapshot.get("id"), str):
        named.append(snapshot["id"])
    return tuple(dict.fromkeys(value for value in named if value))


def history_reference_ids(record: JournalRecord) -> tuple[str, ...]:
    """The nodes a ledger saves a history reference to the record for: every node it names,
    except a direct store's record under its derived id, which is read from the node's
    evidence instead (see direct_store_record_id)."""
    if record.operation == DIRECT_STORE_OPERATION_NAME and record.id == direct_store_record_id(
        record.subject_id
    ):
        return ()
    return referenced_node_ids(record)


@dataclass(frozen=True)
class NodeHistoryPage:
    """One page of the records that name a node, oldest first (the ledger's answer)."""

    records: tuple[JournalRecord, ...]
    # The position of the last record read when more follow; None at the end.
    next_position: str | None


@dataclass(frozen=True)
class OperationEntry:
    record: JournalRecord
    verified: bool


@dataclass(frozen=True)
class NodeProvenance:
    node: MemoryNode
    # The node's evidence events that are still stored, in evidence order.
    evidence: tuple[Event, ...]
    # Evidence ids whose event is gone (deleted).
    missing_evidence: tuple[str, ...]
    operations: tuple[OperationEntry, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class NeighborNode:
    node: MemoryNode
    hops: int
    edge_types: tuple[str, ...]


@dataclass(frozen=True)
class NodeNeighborhood:
    node_id: str
    max_hops: int
    neighbors: tuple[NeighborNode, ...]
    truncated: bool


@dataclass(frozen=True)
class NodeChain:
    node_id: str
    direction: ChainDirection
    nodes: tuple[MemoryNode, ...]
    truncated: bool
