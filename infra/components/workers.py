"""The five Lambda functions, their triggers, and each one's least-privilege grants."""

from __future__ import annotations

from typing import cast

from aws_cdk import Acknowledgment, CfnElement, Duration, Stack, Validations
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from infra.components.checkov_skips import skip
from infra.components.function_factory import FunctionFactory, FunctionSpec
from infra.components.queues import Queues
from infra.components.search import Search
from infra.components.storage import Storage
from infra.config import DeploymentConfig
from prme.model.input_policy import LAMBDA_MAX_BODY_BYTES
from prme.settings import Settings, embedding_dimension

# The functions embed with Titan v2 at this dimension; the stack creates the index with it.
EMBEDDING_DIMENSION = embedding_dimension("bedrock")


class Workers(Construct):
    """`api`, `materializer`, `extractor`, `ingest` (the bulk-ingest consumer) and
    `maintenance`. Each queue consumer takes its timeout and batch size from its queue's spec
    (whose visibility timeout follows from that timeout) and reads one queue only."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        storage: Storage,
        queues: Queues,
        search: Search,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._storage = storage
        self._search = search
        env = Settings.env_name
        factory = FunctionFactory(
            self,
            code=lambda_.Code.from_asset(str(config.lambda_asset)),
            environment={
                env("backend"): "aws",
                env("table_name"): storage.table.table_name,
                env("queue_prefix"): config.resource_prefix,
                env("opensearch_url"): search.endpoint_url,
                env("opensearch_index_alias"): config.search_index_alias,
                env("opensearch_replicas"): str(config.search_replicas),
                env("opensearch_auth"): "es",
                env("embedder"): "bedrock",
                env("bedrock_embedding_model_id"): config.embedding_model_id,
                env("bedrock_embedding_dimension"): str(EMBEDDING_DIMENSION),
                env("extractor"): "bedrock",
                env("bedrock_extraction_model_id"): config.extraction_model_id,
            },
            log_retention=config.log_retention,
        )
        concurrency = config.reserved_concurrency
        materialize, extract, ingest = queues["materialize"], queues["extract"], queues["ingest"]

        self.api = factory.build(
            FunctionSpec(
                "api", "functions.api.handler", 1024, Duration.seconds(29), concurrency["api"]
            )
        )
        # Small enough that every body the function accepts fits Lambda's invoke payload.
        self.api.add_environment(env("max_body_bytes"), str(LAMBDA_MAX_BODY_BYTES))
        if concurrency["api"] is None:
            skip(
                self.api,
                "CKV_AWS_115",
                "The api's load is bounded by the HTTP API stage throttle (prme:apiRateLimit, "
                "prme:apiBurstLimit) and the workers are capped separately; reserving concurrency "
                "for it is opt-in (prme:apiReservedConcurrency): low-quota accounts cannot "
                "reserve any.",
            )
        self.materializer = factory.build(
            FunctionSpec(
                "materializer",
                "functions.materializer.handler",
                1024,
                Duration.seconds(materialize.spec.consumer_timeout_s),
                concurrency["materializer"],
            )
        )
        self.extractor = factory.build(
            FunctionSpec(
                "extractor",
                "functions.extractor.handler",
                1024,
                Duration.seconds(extract.spec.consumer_timeout_s),
                concurrency["extractor"],
            )
        )
        self.ingest = factory.build(
            FunctionSpec(
                "ingest",
                "functions.ingest_consumer.handler",
                1024,
                Duration.seconds(ingest.spec.consumer_timeout_s),
                concurrency["ingest"],
            )
        )
        self.maintenance = factory.build(
            FunctionSpec(
                "maintenance",
                "functions.maintenance.handler",
                512,
                Duration.minutes(2),
                concurrency["maintenance"],
            )
        )
        self.functions = {
            "api": self.api,
            "materializer": self.materializer,
            "extractor": self.extractor,
            "ingest": self.ingest,
            "maintenance": self.maintenance,
        }

        consumers = {"materializer": materialize, "extractor": extract, "ingest": ingest}
        for name, queue in consumers.items():
            self.functions[name].add_event_source(
                sources.SqsEventSource(
                    queue.queue,
                    batch_size=queue.spec.batch_size,
                    report_batch_item_failures=True,
                    max_concurrency=config.max_concurrency[name],
                )
            )
        events.Rule(
            self,
            "MaintenanceSchedule",
            schedule=events.Schedule.rate(Duration.minutes(5)),
            targets=[targets.LambdaFunction(self.maintenance)],
        )

        # Grants, function by function. The event sources above already grant consumption.
        for function in self.functions.values():
            self._grant_table(function)
        # api: stores (index first, then commit, announce on failure) and retrieves.
        for queue in (materialize, extract, ingest):
            queue.queue.grant_send_messages(self.api)
        self._grant_search(self.api)
        # A caller may wait for extraction, which then runs in the API function.
        self._grant_models(self.api, config.embedding_model_id, config.extraction_model_id)
        # materializer: embeds and indexes; the backend resolves both work queues when it starts.
        extract.queue.grant_send_messages(self.materializer)
        self._grant_search(self.materializer)
        self._grant_models(self.materializer, config.embedding_model_id)
        # extractor: extracts with the Converse model, embeds and indexes what it found; the
        # backend resolves both work queues when it starts.
        materialize.queue.grant_send_messages(self.extractor)
        self._grant_search(self.extractor)
        self._grant_models(self.extractor, config.embedding_model_id, config.extraction_model_id)
        # ingest: commits fast-ingest batches and announces their materialization; the
        # backend resolves both work queues when it starts.
        for queue in (materialize, extract):
            queue.queue.grant_send_messages(self.ingest)
        # maintenance: the sweeper re-announces overdue pending work.
        for queue in (materialize, extract):
            queue.queue.grant_send_messages(self.maintenance)

        # indexsetup: the custom resource that creates the search index at deploy time.
        self.index_setup = factory.build(
            FunctionSpec(
                "indexsetup", "functions.index_setup.handler", 256, Duration.minutes(2), None
            )
        )
        search.create_index(
            self.index_setup, alias=config.search_index_alias, dimension=EMBEDDING_DIMENSION
        )
        skip(
            self.index_setup,
            "CKV_AWS_115",
            "Invoked only by CloudFormation, once per deploy of the index resource; reserving "
            "concurrency for it would only take from the account's pool (low-quota accounts "
            "cannot reserve any).",
        )
        self.functions["indexsetup"] = self.index_setup

    def _grant_table(self, function: lambda_.Function) -> None:
        self._storage.table.grant_read_write_data(function)
        Validations.of(function.role or function).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{self._table_logical_id()}.Arn>/index/*]",
                reason="Queries on the GSIs of this one table (owner-pending, pending, expiring); "
                "the wildcard covers only that table's own index names.",
            )
        )

    def _grant_search(self, function: lambda_.Function) -> None:
        if function.role is None:  # the factory always gives one
            raise ValueError(f"{function.node.path} has no role to grant search access to")
        self._search.grant_http(function.role)

    def _grant_models(self, function: lambda_.Function, *model_ids: str) -> None:
        stack = Stack.of(self)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel"],
                resources=[
                    stack.format_arn(
                        service="bedrock",
                        account="",
                        resource="foundation-model",
                        resource_name=model_id,
                    )
                    for model_id in model_ids
                ],
            )
        )

    def _table_logical_id(self) -> str:
        stack = Stack.of(self)
        cfn_table = cast(CfnElement, self._storage.table.node.default_child)
        return cast(str, stack.resolve(stack.get_logical_id(cfn_table)))
