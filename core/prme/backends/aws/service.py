"""Composition of the AWS backend from settings: boto3 clients, OpenSearch client, engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from prme.engine.config import EngineConfig
from prme.engine.credentials import CredentialService
from prme.engine.deps import EngineDeps
from prme.engine.limits import LimitGate
from prme.engine.service import MemoryEngine
from prme.errors import StorageUnavailableError
from prme.ports import Clock, Embedder, Extractor, UsageLog
from prme.retrieval.tokens import Cl100kTokenCounter, TokenCounter
from prme.settings import Settings


@dataclass(frozen=True)
class AwsClients:
    dynamodb: Any
    sqs: Any
    opensearch: Any
    # Only where imports may be uploaded (PRME_UPLOAD_BUCKET): it signs their upload URLs.
    s3: Any = None


def build_clients(settings: Settings) -> AwsClients:
    """One client per service; endpoints come from AWS_ENDPOINT_URL* and PRME_OPENSEARCH_URL."""
    import boto3

    from prme.backends.aws.deadline_clients import DeadlineBoundClient
    from prme.backends.aws.opensearch_index import build_opensearch_client

    if not settings.opensearch_url:
        raise StorageUnavailableError("PRME_OPENSEARCH_URL is not set")
    session = boto3.session.Session()
    return AwsClients(
        # Timeouts and retries follow each request's deadline (see deadline_clients.py).
        dynamodb=DeadlineBoundClient(lambda config: session.client("dynamodb", config=config)),
        sqs=DeadlineBoundClient(lambda config: session.client("sqs", config=config)),
        opensearch=build_opensearch_client(
            settings.opensearch_url, auth=settings.opensearch_auth, region=session.region_name
        ),
        s3=_upload_client(session) if settings.upload_bucket else None,
    )


def _upload_client(session: Any) -> Any:
    """An S3 client that presigns with SigV4 (which signs the upload's Content-Length)."""
    from botocore.config import Config

    return session.client(
        "s3",
        config=Config(
            signature_version="s3v4",
            connect_timeout=3,
            read_timeout=10,
            retries={"mode": "standard"},
        ),
    )


@dataclass
class AwsBackend:
    engine: MemoryEngine
    credentials: CredentialService
    clients: AwsClients

    def close(self) -> None:
        self.clients.opensearch.close()


def open_aws(
    settings: Settings,
    *,
    embedder: Embedder,
    extractor: Extractor | None = None,
    clients: AwsClients | None = None,
    clock: Clock | None = None,
    token_counter: TokenCounter | None = None,
    config: EngineConfig | None = None,
    refresh_on_write: bool | None = None,
    on_index_refused: Callable[[str], None] | None = None,
    observe_usage: Callable[[UsageLog], UsageLog] | None = None,
) -> AwsBackend:
    """The engine on the AWS adapters. The index adapter checks, before its first write or
    search, that the alias leads to an index made for this embedder's vectors, and refuses
    otherwise (`on_index_refused` hears the reason, e.g. to count it in a metric).
    `observe_usage` wraps the usage log (the functions add per-tenant metrics to it)."""
    from prme.backends.aws.dynamodb_imports import DynamoDbImportJobStore
    from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
    from prme.backends.aws.dynamodb_limits import DynamoDbLimits
    from prme.backends.aws.dynamodb_ranking_profiles import DynamoDbRankingProfileStore
    from prme.backends.aws.dynamodb_usage import DynamoDbUsageLog
    from prme.backends.aws.opensearch_index import OpenSearchIndex, VectorShape
    from prme.backends.aws.resources import queue_specs
    from prme.backends.aws.s3_upload_store import S3UploadStore
    from prme.backends.aws.sqs_import_queue import SqsImportQueue
    from prme.backends.aws.sqs_queue import SqsWorkQueue
    from prme.backends.clock import SystemClock

    clients = clients or build_clients(settings)
    clock = clock or SystemClock()
    ledger = DynamoDbLedger(clients.dynamodb, settings.table_name)
    limit_store = DynamoDbLimits(clients.dynamodb, settings.table_name)
    specs = queue_specs(settings.queue_prefix)
    queue_urls = {
        family: clients.sqs.get_queue_url(QueueName=specs[family].name)["QueueUrl"]
        for family in ("materialize", "extract")
    }
    usage: UsageLog = DynamoDbUsageLog(clients.dynamodb, settings.table_name)
    if observe_usage is not None:
        usage = observe_usage(usage)
    deps = EngineDeps(
        ledger=ledger,
        index=OpenSearchIndex(
            clients.opensearch,
            settings.opensearch_index_alias,
            refresh_on_write=(
                settings.opensearch_refresh_on_write
                if refresh_on_write is None
                else refresh_on_write
            ),
            expected=VectorShape.expected(embedder.model.dimension),
            on_refused=on_index_refused,
        ),
        queue=SqsWorkQueue(clients.sqs, queue_urls),
        embedder=embedder,
        clock=clock,
        token_counter=token_counter or Cl100kTokenCounter(),
        config=config or settings.engine,
        limits=LimitGate(limit_store, limit_store, settings.limits, clock),
        imports=DynamoDbImportJobStore(clients.dynamodb, settings.table_name),
        import_queue=SqsImportQueue(clients.sqs, specs["ingest"].name),
        uploads=(
            S3UploadStore(clients.s3, settings.upload_bucket, clock)
            if settings.upload_bucket and clients.s3 is not None
            else None
        ),
        usage=usage,
        ranking_profiles=DynamoDbRankingProfileStore(clients.dynamodb, settings.table_name),
    )
    if extractor is not None:
        deps = replace(deps, extractor=extractor)
    return AwsBackend(
        engine=MemoryEngine(deps), credentials=CredentialService(ledger, clock), clients=clients
    )


def open_aws_credentials(settings: Settings, dynamodb: Any | None = None) -> CredentialService:
    """API key management on the table alone: needs only PRME_TABLE_NAME, the region and AWS
    credentials, so `prme keys` cannot go wrong on a setting it does not use (embedder,
    queues, search domain)."""
    from prme.backends.aws.deadline_clients import DeadlineBoundClient
    from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
    from prme.backends.clock import SystemClock

    if dynamodb is None:
        import boto3

        session = boto3.session.Session()
        dynamodb = DeadlineBoundClient(lambda config: session.client("dynamodb", config=config))
    return CredentialService(DynamoDbLedger(dynamodb, settings.table_name), SystemClock())


def open_aws_limits(settings: Settings, dynamodb: Any | None = None) -> LimitGate:
    """Per-tenant limits on the table alone, for the provider's `prme limits`: like
    `open_aws_credentials`, it reads no setting it does not use."""
    from prme.backends.aws.deadline_clients import DeadlineBoundClient
    from prme.backends.aws.dynamodb_limits import DynamoDbLimits
    from prme.backends.clock import SystemClock

    if dynamodb is None:
        import boto3

        session = boto3.session.Session()
        dynamodb = DeadlineBoundClient(lambda config: session.client("dynamodb", config=config))
    store = DynamoDbLimits(dynamodb, settings.table_name)
    return LimitGate(store, store, settings.limits, SystemClock())


def bootstrap_from_settings(
    settings: Settings,
    clients: AwsClients,
    *,
    dimension: int,
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, str]:
    """Create (or keep) the table, queues and index alias the settings name."""
    from prme.backends.aws.bootstrap import bootstrap

    return bootstrap(
        dynamodb=clients.dynamodb,
        sqs=clients.sqs,
        opensearch=clients.opensearch,
        table_name=settings.table_name,
        queue_prefix=settings.queue_prefix,
        index_alias=settings.opensearch_index_alias,
        dimension=dimension,
        replicas=settings.opensearch_replicas,
        say=say,
    )
