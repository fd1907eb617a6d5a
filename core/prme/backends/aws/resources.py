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
# AWS advises a visibility timeout of at least six times the consuming function's timeout:
# while the event source mapping retries a throttled or failed invocation, its batch stays
# invisible instead of being received again (and counted towards the DLQ) while in flight.
VISIBILITY_PER_CONSUMER_TIMEOUT = 6


@dataclass(frozen=True)
class QueueSpec:
    """A work queue, its dead-letter queue, and the function that consumes it.

    The consumer's timeout is the one source of the queue's visibility timeout; the stack
    gives the consuming function this timeout and its event source mapping this batch size.
    """

    name: str
    dead_letter_name: str
    consumer_timeout_s: int
    max_receive_count: int
    batch_size: int

    @property
    def visibility_timeout_s(self) -> int:
        return VISIBILITY_PER_CONSUMER_TIMEOUT * self.consumer_timeout_s

    @property
    def delivery_span_s(self) -> int:
        """How long SQS may go on delivering one message (every receive, each hidden for the
        visibility timeout) before it dead-letters it: work younger than this may still be in
        flight, so the sweeper does not count it overdue."""
        return self.max_receive_count * self.visibility_timeout_s


def queue_specs(prefix: str) -> dict[str, QueueSpec]:
    """The work queues by purpose; each with its dead-letter queue.

    Batch sizes: a materialization record takes well under a second (one embedding, one bulk
    write, one commit), so ten fit 30 s easily; when a dependency hangs, the deadline clients
    end its call at the invocation's deadline and the records left fail fast (partial batch
    failure) and are redelivered, as they would have failed against the same outage anyway.
    An extraction record is a Converse call of seconds to a minute: one record per invocation,
    so each receive is one real attempt with the whole timeout to itself, and a slow model
    never spends a receive of a record that was waiting behind it.
    """
    return {
        "materialize": QueueSpec(
            f"{prefix}-materialize", f"{prefix}-materialize-dlq", 30, 5, batch_size=10
        ),
        "extract": QueueSpec(f"{prefix}-extract", f"{prefix}-extract-dlq", 120, 5, batch_size=1),
        "ingest": QueueSpec(f"{prefix}-ingest", f"{prefix}-ingest-dlq", 60, 5, batch_size=10),
    }


# -- OpenSearch -----------------------------------------------------------------------
# 2: vectors excluded from `_source` (a mapping setting an existing index cannot take: a
# version 1 index keeps working, with its vectors in `_source`, until it is rebuilt).
INDEX_VERSION = 2
# Metric a function counts when it refuses the index it found (missing alias, another vector
# dimension or engine); the stack alarms on it.
SEARCH_INDEX_REFUSED_METRIC = "SearchIndexRefused"
# Published by the maintenance function for work the sweeper gave up on (no DLQ sees it).
OVERDUE_WORK_FAILED_METRIC = "OverdueWorkFailed"
# Counted by a function for usage entries its usage log could not save (lost to billing).
USAGE_NOT_RECORDED_METRIC = "UsageNotRecorded"
VECTOR_FIELD = "vector"
# A record's own embedding, kept only to be read back (never searched, no doc values); no
# longer written, and out of `_source` from index version 2 on.
CONTENT_VECTOR_FIELD = "content_vector"
# The same as little-endian float32 (the precision the vector field and the embedded index
# keep), base64 in `_source`: what a session's next record reads back, a third of the JSON.
CONTENT_VECTOR_BYTES_FIELD = "content_vector_f32"


def added_properties() -> dict[str, Any]:
    """Fields added to the mapping after version 1 was first created; bootstrap puts them
    on an index that exists already (adding a field is allowed without a reindex)."""
    return {
        CONTENT_VECTOR_FIELD: {"type": "float", "index": False, "doc_values": False},
        CONTENT_VECTOR_BYTES_FIELD: {"type": "binary"},
        # A conditional memory's condition state (issue 20): default retrieval filters on it.
        "condition_state": {"type": "keyword"},
    }


def index_name(alias: str) -> str:
    return f"{alias}-v{INDEX_VERSION}"


def index_body(dimension: int, *, shards: int = 1, replicas: int = 0) -> dict[str, Any]:
    """Settings and mappings of the node index (k-NN on the Lucene HNSW engine)."""
    keyword = {"type": "keyword"}
    date = {"type": "date", "format": "epoch_millis"}
    return {
        "settings": {
            "index": {
                "knn": True,
                "number_of_shards": shards,
                "number_of_replicas": replicas,
                # Slow logs (published by the domain to CloudWatch): a query or fetch past
                # 1 s is worth a look (a retrieval normally takes tens of milliseconds),
                # past 5 s it spends a fifth of the request budget. Search lines carry the
                # query body; indexing lines never carry the document (memory content).
                "search.slowlog.threshold.query.warn": "5s",
                "search.slowlog.threshold.query.info": "1s",
                "search.slowlog.threshold.fetch.warn": "1s",
                "search.slowlog.threshold.fetch.info": "500ms",
                "indexing.slowlog.threshold.index.warn": "5s",
                "indexing.slowlog.threshold.index.info": "1s",
                "indexing.slowlog.source": "0",
            },
        },
        "mappings": {
            # Searches read ids from doc values and a predecessor's vector from its bytes: the
            # floats (about 12 KB of JSON each at 1024 dimensions) are indexed, not kept.
            "_source": {"excludes": [VECTOR_FIELD, CONTENT_VECTOR_FIELD]},
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


# -- S3: import uploads ---------------------------------------------------------------
# An upload is read within minutes of its upload and deleted when its import completes; the
# bucket's lifecycle removes whatever a failed or abandoned import left after this many days.
UPLOAD_RETENTION_DAYS = 2
# Parts of a multipart upload nobody completed cost storage without showing as objects.
UPLOAD_ABORT_INCOMPLETE_DAYS = 1


def upload_bucket_lifecycle() -> dict[str, Any]:
    """The LifecycleConfiguration of the uploads bucket (S3 PutBucketLifecycleConfiguration)."""
    from prme.model.uploads import UPLOAD_PREFIX

    return {
        "Rules": [
            {
                "ID": "expire-import-uploads",
                "Status": "Enabled",
                "Filter": {"Prefix": UPLOAD_PREFIX},
                "Expiration": {"Days": UPLOAD_RETENTION_DAYS},
                "AbortIncompleteMultipartUpload": {
                    "DaysAfterInitiation": UPLOAD_ABORT_INCOMPLETE_DAYS
                },
            }
        ]
    }
