"""`PrmeStack`: storage, queues, search, workers, api and monitoring, composed."""

from __future__ import annotations

from typing import Any

from aws_cdk import Aspects, CfnOutput, Stack
from constructs import Construct

from infra.components.api import Api
from infra.components.checkov_skips import SkipsByKind
from infra.components.monitoring import Monitoring, Watched
from infra.components.queues import Queues
from infra.components.search import Search
from infra.components.storage import Storage
from infra.components.uploads import Uploads
from infra.components.workers import Workers
from infra.config import DeploymentConfig


class PrmeStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        config = DeploymentConfig.from_context(self.node)
        storage = Storage(self, "Storage")
        queues = Queues(self, "Queues", prefix=config.resource_prefix)
        search = Search(self, "Search", config=config)
        workers = Workers(
            self, "Workers", config=config, storage=storage, queues=queues, search=search
        )
        api = Api(self, "Api", config=config, function=workers.api)
        uploads = Uploads(self, "Uploads")
        uploads.grant_api(workers.api)
        Monitoring(
            self,
            "Monitoring",
            config=config,
            queues=queues,
            functions=workers.functions,
            watched=Watched(stage=api.stage, table=storage.table, domain=search.domain),
        )
        Aspects.of(self).add(SkipsByKind())

        CfnOutput(self, "ApiUrl", value=api.url)
        CfnOutput(self, "TableName", value=storage.table.table_name)
        CfnOutput(self, "UploadBucketName", value=uploads.bucket.bucket_name)
        CfnOutput(self, "QueuePrefix", value=config.resource_prefix)
        for purpose, queue in queues.by_purpose.items():
            CfnOutput(self, f"{purpose.capitalize()}QueueUrl", value=queue.queue.queue_url)
            CfnOutput(
                self,
                f"{purpose.capitalize()}DeadLetterQueueUrl",
                value=queue.dead_letter_queue.queue_url,
            )
        CfnOutput(self, "SearchDomainEndpoint", value=search.endpoint_url)
