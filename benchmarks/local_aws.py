"""Fresh, uniquely named resources on the local AWS for one benchmark run."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from prme.settings import Settings

if TYPE_CHECKING:
    from prme.backends.aws.service import AwsClients


def require_local_aws() -> None:
    if not os.environ.get("AWS_ENDPOINT_URL") or not os.environ.get("PRME_OPENSEARCH_URL"):
        raise SystemExit("start the local AWS first: make local-aws-up, then export its endpoints")


@contextmanager
def fresh_aws(
    base: Settings, prefix: str, *, dimension: int
) -> Iterator[tuple[Settings, AwsClients]]:
    """`base` with its own table, queues and index (`prme-<prefix>-<random>`), bootstrapped
    for vectors of `dimension`, and every one of them deleted afterwards."""
    from prme.backends.aws.resources import index_name, queue_specs
    from prme.backends.aws.service import bootstrap_from_settings, build_clients

    require_local_aws()
    name = f"prme-{prefix}-{uuid.uuid4().hex[:8]}"
    settings = base.model_copy(
        update={
            "backend": "aws",
            "table_name": name,
            "queue_prefix": name,
            "opensearch_index_alias": name,
        }
    )
    clients = build_clients(settings)
    bootstrap_from_settings(settings, clients, dimension=dimension)
    try:
        yield settings, clients
    finally:
        clients.dynamodb.delete_table(TableName=settings.table_name)
        for spec in queue_specs(settings.queue_prefix).values():
            for queue in (spec.name, spec.dead_letter_name):
                url = clients.sqs.get_queue_url(QueueName=queue)["QueueUrl"]
                clients.sqs.delete_queue(QueueUrl=url)
        clients.opensearch.indices.delete(index=index_name(settings.opensearch_index_alias))
        clients.opensearch.close()
