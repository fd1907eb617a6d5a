"""Every AWS resource PRME needs, defined once: `prme bootstrap`, the tests and the CDK stack read it.

Plain data only (no boto3 import), so the CDK app can import it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# -- DynamoDB: one table, single-table design ------------------------------------------
PARTITION_KEY = "pk"
SORT_KEY = "sk"
TTL_ATTRIBUTE = "expires_at_epoch"
# Sparse GSI of pending work for one owner: set while pending, removed when done.
OWNER_PENDING_INDEX = "owner-pending"
OWNER_PENDING_PK = "op_pk"
OWNER_PENDING_SK = "op_sk"
# Sparse GSI of pending work across the deployment, sharded to spread writes.
PENDING_INDEX = "pending"
PENDING_PK = "pw_pk"
PENDING_SK = "pw_sk"
PENDING_SHARDS = 8
# Sparse GSI of nodes with an expiry that are not archived yet, sharded like pending work.
EXPIRING_INDEX = "expiring"
EXPIRING_PK = "ex_pk"
EXPIRING_SK = "ex_sk"
# DynamoDB's item limit is 400 KB including attribute names; keep a margin for them.
MAX_ITEM_BYTES = 390_000
MAX_TRANSACTION_ITEMS = 100
MAX_TRANSACTION_BYTES = 4_000_000


def table_definition(table_name: str) -> dict[str, Any]:
    """Arguments of DynamoDB CreateTable (on-demand billing)."""
    keys = [
        PARTITION_KEY,
        SORT_KEY,
        OWNER_PENDING_PK,
        OWNER_PENDING_SK,
        PENDING_PK,
        PENDING_SK,
        EXPIRING_PK,
        EXPIRING_SK,
    ]
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": k, "AttributeType": "S"} for k in keys],
        "KeySchema": [
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": OWNER_PENDING_INDEX,
                "KeySchema": [
                    {"AttributeName": OWNER_PENDING_PK, "KeyType": "HASH"},
                    {"AttributeName": OWNER_PENDING_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": PENDING_INDEX,
                "KeySchema": [
                    {"AttributeName": PENDING_PK, "KeyType": "HASH"},
                    {"AttributeName": PENDING_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": EXPIRING_INDEX,
                "KeySchema": [
                    {"AttributeName": EXPIRING_PK, "KeyType": "HASH"},
                    {"AttributeName": EXPIRING_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
        ],
    }


# -- SQS ------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueSpec:
    name: str
    dead_letter_name: str
    visibility_timeout_s: int
    max_receive_count: int


def queue_specs(prefix: str) -> dict[str, QueueSpec]:
    """The work queues by purpose; each with its dead-letter queue."""
    return {
        "materialize": QueueSpec(f"{prefix}-materialize", f"{prefix}-materialize-dlq", 60, 5),
        "extract": QueueSpec(f"{prefix}-extract", f"{prefix}-extract-dlq", 300, 5),
        "ingest": QueueSpec(f"{prefix}-ingest", f"{prefix}-ingest-dlq", 120, 5),
    }


# -- OpenSearch -----------------------------------------------------------------------
INDEX_VERSION = 1
# Metric a function counts when it refuses the index it found (missing alias, another vector
# dimension or engine); the stack alarms on it.
SEARCH_INDEX_REFUSED_METRIC = "SearchIndexRefused"
VECTOR_FIELD = "vector"
# A record's own embedding, kept only to be read back (never searched, no doc values).
CONTENT_VECTOR_FIELD = "content_vector"


def added_properties() -> dict[str, Any]:
    """Fields added to the mapping after version 1 was first created; bootstrap puts them
    on an index that exists already (adding a field is allowed without a reindex)."""
    return {CONTENT_VECTOR_FIELD: {"type": "float", "index": False, "doc_values": False}}


def index_name(alias: str) -> str:
    return f"{alias}-v{INDEX_VERSION}"


def index_body(dimension: int, *, shards: int = 1, replicas: int = 0) -> dict[str, Any]:
    """Settings and mappings of the node index (k-NN on the Lucene HNSW engine)."""
    keyword = {"type": "keyword"}
    date = {"type": "date", "format": "epoch_millis"}
    return {
        "settings": {
            "index": {"knn": True, "number_of_shards": shards, "number_of_replicas": replicas},
        },
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "tenant_id": keyword,
                "owner_id": keyword,
                "node_id": keyword,
                "text": {"type": "text", "analyzer": "english"},
                VECTOR_FIELD: {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "method": {
                        "name": "hnsw",
                        "engine": "lucene",
                        "space_type": "cosinesimil",
                        "parameters": {"m": 16, "ef_construction": 128},
                    },
                },
                "embedding_model": keyword,
                "node_type": keyword,
                "source_type": keyword,
                "epistemic_type": keyword,
                "lifecycle_state": keyword,
                "scope": keyword,
                "session_id": keyword,
                "event_time": date,
                "effective_time": date,
                "created_at": date,
                "expires_at": date,
                **added_properties(),
            },
        },
    }
